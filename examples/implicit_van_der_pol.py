"""Implicit time stepping of a stiff oscillator, where the Jacobian from `tg.jacobian` matters.

The Van der Pol oscillator (a triode circuit / relaxation oscillator),

    x' = v,    v' = mu (1 - x^2) v - x,        mu = 20 (stiff),

is integrated with backward Euler: every step solves the nonlinear equation
g(z) = z - s - h f(z) = 0 for the next state z by Newton's method, with the 2x2
Jacobian dg/dz from `tg.jit(tg.jacobian(residual))` on the plain NumPy residual. With
a step h = 0.05 it tracks a fine RK4 reference (h = 1e-3) along the slow branch and
times the first relaxation jump to within a few per cent, while explicit Euler with
the same step blows up (its stability limit here is h < 2 / (3 mu) ~ 0.033), and
solving the same implicit equation without the Jacobian (fixed-point iteration
z <- s + h f(z)) does not converge.

    python examples/implicit_van_der_pol.py
"""
import numpy as np

import tracegrad as tg

MU = 20.0


def f(state):
    x, v = state[0], state[1]
    return np.stack([v, MU * (1.0 - x ** 2) * v - x])


def residual(z, s, h):
    return z - s - h * f(z)


def jacobian_by_hand(z, h):
    x, v = z
    return np.eye(2) - h * np.array([[0.0, 1.0], [-2.0 * MU * x * v - 1.0, MU * (1.0 - x ** 2)]])


def backward_euler(s0, h, steps, tol=1e-10, max_newton=50):
    """The trajectory (steps + 1, 2) and the Newton iterations each step took."""
    dg = tg.jit(tg.jacobian(residual))
    states, newton_iterations = [np.array(s0, dtype=float)], []
    for _ in range(steps):
        s = states[-1]
        z = s.copy()                                 # initial guess: the current state
        for iteration in range(1, max_newton + 1):
            r = residual(z, s, h)
            dz = np.linalg.solve(np.asarray(dg(z, s, h)), r)
            lam = 1.0                                # backtracking, for the fast jumps
            while np.linalg.norm(residual(z - lam * dz, s, h)) > np.linalg.norm(r) and lam > 1e-4:
                lam /= 2
            z = z - lam * dz
            if np.linalg.norm(residual(z, s, h)) < tol:
                newton_iterations.append(iteration)
                break
        else:
            raise RuntimeError(f"Newton did not converge at t = {h * len(newton_iterations):.3f}")
        states.append(z)
    return np.array(states), newton_iterations


def fixed_point_step(s, h, iterations=50):
    """The same implicit equation, iterated without a Jacobian: z <- s + h f(z)."""
    z = s.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iterations):
            z = s + h * f(z)
    return float(np.linalg.norm(residual(z, s, h)))


def explicit_euler(s0, h, steps):
    s = np.array(s0, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            s = s + h * f(s)
    return s


def rk4(s0, h, steps):
    states = [np.array(s0, dtype=float)]
    for _ in range(steps):
        s = states[-1]
        k1 = f(s)
        k2 = f(s + 0.5 * h * k1)
        k3 = f(s + 0.5 * h * k2)
        k4 = f(s + h * k3)
        states.append(s + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.array(states)


def half_period(xs, h):
    """The time of the first relaxation jump: x first becomes negative."""
    return float(np.argmax(xs < 0) * h)


def main(small=False):
    s0 = np.array([2.0, 0.0])
    h = 0.05
    t_end = 12.0 if small else 40.0
    steps = round(t_end / h)

    z = np.array([1.5, -0.7])
    J = np.asarray(tg.jacobian(residual)(z, s0, h))
    jac_err = float(np.max(np.abs(J - jacobian_by_hand(z, h))))
    print(f"tg.jacobian of the residual at z = {z}:\n{J}\n"
          f"  (against the hand-derived one: max error {jac_err:.1e})")

    h_ref, t_slow = 1e-3, 12.0
    reference = rk4(s0, h_ref, round(t_end / h_ref))
    implicit, newton_iterations = backward_euler(s0, h, steps)
    explicit = explicit_euler(s0, h, steps)
    ref_slow, imp_slow = reference[round(t_slow / h_ref)], implicit[round(t_slow / h)]
    implicit_err = float(np.max(np.abs(imp_slow - ref_slow)))
    finite = np.all(np.isfinite(explicit))
    explicit_err = float(np.abs(explicit[0] - reference[-1][0])) if finite else float("inf")
    fixed_point_residual = fixed_point_step(s0, h)

    print(f"\nVan der Pol, mu = {MU:g}, from (x, v) = (2, 0) to t = {t_end:g}:")
    print(f"  at t = {t_slow:g}: RK4 reference (h = {h_ref:g}) x = {ref_slow[0]:.5f}; "
          f"backward Euler + Newton (h = {h}) x = {imp_slow[0]:.5f}; |error| {implicit_err:.2e}")
    print(f"    Newton iterations per step: mean {np.mean(newton_iterations):.2f}, "
          f"max {max(newton_iterations)}" + ("" if small else " (the most in the fast jump)"))
    results = {"implicit_error": implicit_err, "newton_iterations_max": max(newton_iterations),
               "newton_iterations_mean": float(np.mean(newton_iterations))}
    if not small:   # the run goes through the first relaxation jump
        t_ref, t_imp = half_period(reference[:, 0], h_ref), half_period(implicit[:, 0], h)
        results["half_period_error"] = abs(t_imp - t_ref) / t_ref
        print(f"  first relaxation jump (x < 0) at t = {t_ref:.3f} (RK4), {t_imp:.3f} (backward Euler): "
              f"relative error {results['half_period_error']:.1%}")
        assert results["half_period_error"] < 0.03
    print(f"  explicit Euler, h = {h}: x(t = {t_end:g}) = {explicit[0]:.5g}   (|error| {explicit_err:.2e})")
    print(f"  the first implicit step by fixed-point iteration (no Jacobian), 50 iterations: "
          f"|residual| {fixed_point_residual:.2e}"
          + ("" if np.isfinite(fixed_point_residual) else " (diverged)"))

    assert jac_err < 1e-12
    assert implicit_err < 0.01 and max(newton_iterations) <= 25 and np.mean(newton_iterations) < 4
    assert not explicit_err < 1.0                       # blows up (inf / nan) or is far off
    assert not fixed_point_residual < 1e-6              # diverges without the Jacobian
    results.update(explicit_error=explicit_err, fixed_point_residual=fixed_point_residual,
                   jacobian_error=jac_err)
    return results


if __name__ == "__main__":
    main()
