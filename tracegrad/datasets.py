"""Small datasets for the demo, the examples and the docs.

``digits()`` is scikit-learn's ``load_digits`` (1797 real 8x8 images) when
scikit-learn is importable; otherwise a deterministic stand-in made with NumPy:
seven-segment glyphs of the ten digits on an 8x8 grid, shifted by up to a pixel in
each direction, with random stroke intensity, dropped stroke pixels and Gaussian
noise. Either way the pixels are in [0, 1].
"""
import numpy as np

# seven-segment glyphs: which of the segments a..g each digit lights
_SEGMENTS = {0: "abcdef", 1: "bc", 2: "abged", 3: "abgcd", 4: "fgbc",
             5: "afgcd", 6: "afgedc", 7: "abc", 8: "abcdefg", 9: "abcdfg"}
_STROKES = {"a": (0, slice(0, 5)), "g": (3, slice(0, 5)), "d": (6, slice(0, 5)),
            "f": (slice(0, 4), 0), "b": (slice(0, 4), 4),
            "e": (slice(3, 7), 0), "c": (slice(3, 7), 4)}


def _glyph(digit):
    """A 7x5 binary glyph (rows 0..6, cols 0..4) of one digit."""
    img = np.zeros((7, 5))
    for seg in _SEGMENTS[digit]:
        img[_STROKES[seg]] = 1.0
    return img


def synthetic_digits(n=1797, seed=0):
    """A deterministic 10-class 8x8 dataset: (images (n, 8, 8) in [0, 1], labels (n,))."""
    rng = np.random.default_rng(seed)
    glyphs = [_glyph(d) for d in range(10)]
    labels = np.arange(n) % 10
    rng.shuffle(labels)
    images = np.zeros((n, 8, 8))
    for i, label in enumerate(labels):
        top, left = rng.integers(0, 2), rng.integers(1, 3)       # shifted by up to a pixel
        glyph = glyphs[label] * rng.uniform(0.5, 1.0)
        glyph = glyph * (rng.uniform(size=glyph.shape) > 0.1)     # broken strokes
        images[i, top:top + 7, left:left + 5] = glyph
    images += 0.1 * rng.standard_normal(images.shape)
    return np.clip(images, 0.0, 1.0), labels


def digits(seed=0, synthetic=None):
    """(images (n, 8, 8) in [0, 1], labels (n,), a description of the source).
    ``synthetic=True`` forces the stand-in, ``False`` requires scikit-learn."""
    if not synthetic:
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            if synthetic is False:
                raise
        else:
            data = load_digits()
            return data.images / 16.0, data.target, "scikit-learn load_digits"
    images, labels = synthetic_digits(seed=seed)
    return images, labels, "synthetic seven-segment 8x8 digits (scikit-learn not used)"
