"""A first look at autodiff_viz: a gradient, a Jacobian, and the record behind them.

Run:  python examples/quickstart.py
"""
import numpy as np

import autodiff_viz as adv

w = adv.Variable([[0.5, -1.0], [2.0, 0.3]], name="w")
x = adv.constant([1.0, 2.0], name="x")

with adv.GradientTape(persistent=True) as tape:
    h = adv.tanh(x @ w)          # a tiny layer
    loss = adv.sum(h ** 2)       # a scalar loss

print("loss =", loss.numpy())
print("d loss / d w =\n", tape.gradient(loss, w).numpy())

print("\nh has shape", h.shape, "so d h / d w is a Jacobian of shape", h.shape + w.shape)
J = tape.jacobian(h, w)
print(np.round(J.numpy(), 4))
print("\ntape.gradient(h, w) is the sum over h's entries (1ᵀJ):")
print(np.allclose(tape.gradient(h, w).numpy(), J.numpy().sum(axis=0)))

print("\nThe tape, one record per op:")
for node in tape.nodes:
    ins = ", ".join(t.name or f"#{t._id}" for t in node.inputs)
    factors = ", ".join(f"{s.name}: {s.factor}" for s in node.rule.inputs if s.factor)
    print(f"  #{node.out_id:<4} {node.rule.name:<8}({ins})  shape {node.out.shape}  factors: {factors}")
