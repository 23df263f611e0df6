"""``tg.nn.utils.rnn``: padding a list of variable-length sequences into one tensor."""
from __future__ import annotations

from ...creation import full
from ...functions import cat, stack

__all__ = ["pad_sequence", "unpad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (L_max, B, *) (or (B, L_max, *) with
    ``batch_first``), filling with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of ``pad_sequence``: a list of the sequences cut to ``lengths``."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths = [int(n) for n in (lengths.tolist() if hasattr(lengths, "tolist") else lengths)]
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), lengths)]
