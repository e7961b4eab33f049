"""Why-None in PyTorch with a recording: in-place ops, losses computed after the block, from_numpy,
the order of backward() / zero_grad() / .grad reads, and clear errors for wrong arguments."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401

HERE = __file__


def line_of(tag) -> int:
    return int(code_lines.line_of(HERE, tag).rsplit(":", 1)[1])


def _data():
    torch.manual_seed(0)
    return torch.randn(4, 3), torch.randn(3, 1, requires_grad=True)


@pytest.mark.parametrize("inplace", ["mul_", "iadd", "relu_"])
def test_an_in_place_op_on_the_path_keeps_the_gradient_connected(inplace):
    x, w = _data()
    with adv.torch.record() as rec:
        if inplace == "mul_":
            z = x @ w
            z.mul_(2)
        elif inplace == "iadd":
            z = x @ w
            z += 1
        else:
            z = (x @ w).relu_()
        loss = z.sum()
    assert torch.autograd.grad(loss, w, retain_graph=True)[0] is not None
    assert rec.explain(loss, w).reason == "connected"


def test_a_cut_before_an_in_place_op_is_still_found():
    x, w = _data()
    with adv.torch.record() as rec:
        z = (x @ w).detach()                                  # <- detach
        z.mul_(2)
        loss = z.sum()
    ex = rec.explain(loss, w)
    assert ex.reason == "detached" and ex.location.endswith(f":{line_of('detach')}")


def test_a_loss_computed_after_the_recording_is_named_not_called_unused():
    torch.manual_seed(1)
    lin, x = torch.nn.Linear(3, 1), torch.randn(4, 3)
    with adv.torch.record() as rec:
        z = lin(x)
    loss = (z ** 2).sum()
    ex = rec.explain(loss, lin.weight)
    assert ex.reason == "computed_outside_recording"
    assert "after the `with adv.torch.record()" in ex.message and "does not depend" not in ex.message
    with pytest.raises(ValueError, match="not computed inside this recording.*Fix"):
        rec.trace(loss, [lin.weight])


@pytest.mark.parametrize("rewrap", ["from_numpy", "as_tensor", "tensor"])
def test_numpy_and_back_through_from_numpy_is_named_like_torch_tensor(rewrap):
    x, w = _data()
    with adv.torch.record() as rec:
        a = (x @ w).detach().numpy()                          # <- numpy
        loss = getattr(torch, rewrap)(a).sum()                # <- back
    ex = rec.explain(loss, w)
    assert ex.reason == "left_the_graph" and ex.location.endswith(f":{line_of('numpy')}")
    assert f"torch.{rewrap}(...)" in ex.message and f"test_torch_bridge_diagnosis.py:{line_of('back')}:" in ex.message
    tr = rec.trace(loss)
    assert rewrap in [n.op for n in tr.nodes]


def test_from_numpy_of_a_plain_array_is_recorded_and_torch_from_numpy_is_restored():
    original = torch.from_numpy
    with adv.torch.record() as rec:
        t = torch.from_numpy(np.ones(3))
    assert torch.from_numpy is original
    assert [(op.name, op.kind) for op in rec.ops] == [("from_numpy", "rewrap")] and rec.name_of(t) == "t"
    with pytest.raises(ZeroDivisionError), adv.torch.record():
        1 / 0
    assert torch.from_numpy is original


@pytest.mark.parametrize("read", [True, False])
def test_zero_grad_set_to_none_after_the_last_backward_is_named(read):
    x, w = _data()
    opt = torch.optim.SGD([w], lr=0.1)
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)                       # <- reset
        g = w.grad if read else None                          # <- read
    assert g is None and w.grad is None
    ex = rec.explain(loss, w)
    assert ex.reason == "read_before_backward"
    assert ex.location.endswith(f":{line_of('read' if read else 'reset')}")
    assert "zero_grad" in ex.message and f"test_torch_bridge_diagnosis.py:{line_of('reset')}:" in ex.message


def test_a_grad_read_again_after_backward_is_connected():
    x, w = _data()
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
        early = w.grad
        loss.backward()
        late = w.grad
    assert early is None and late is not None
    assert rec.explain(loss, w).reason == "connected"


def test_a_read_before_backward_says_grad_holds_a_gradient_now():
    x, w = _data()
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
        early = w.grad                                        # <- early
        loss.backward()
    assert early is None and w.grad is not None
    ex = rec.explain(loss, w)
    assert ex.reason == "read_before_backward" and ex.location.endswith(f":{line_of('early')}")
    assert "holds a gradient now" in ex.message and "zero_grad" not in ex.message.split("Fix")[0]


def test_a_read_after_the_backward_of_another_loss_says_so():
    x, w = _data()
    v = torch.randn(3, 1, requires_grad=True)
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
        other = (x @ v).sum()
        other.backward()                                      # <- other
        seen = w.grad
    assert seen is None
    ex = rec.explain(loss, w)
    assert ex.reason == "read_before_backward" and "did not fill it" in ex.message
    assert f"test_torch_bridge_diagnosis.py:{line_of('other')}:" in ex.message


def test_without_a_recording_a_fresh_model_is_not_said_to_be_reset():
    torch.manual_seed(2)
    lin = torch.nn.Linear(3, 1)
    loss = lin(torch.randn(4, 3)).sum()
    ex = adv.torch.explain(loss, lin)["weight"]
    assert ex.reason == "read_before_backward"
    assert "was reset" not in ex.message and "backward()" in ex.message


def test_trace_sources_must_be_tensors():
    x, w = _data()
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
    with pytest.raises(TypeError, match="trace: sources must be tensors, got str"):
        rec.trace(loss, "w")
    with pytest.raises(TypeError, match="sources must be tensors, got str"):
        rec.trace(loss, [w, "b"])


def test_construction_lines_are_named_inside_the_function_that_opened_the_recording():
    """A script whose ``main()`` opens the recording and builds the model twice: the two construction lines are
    ``main``'s own lines (where the optimizer's model and the trained one were built), not the ``main()`` call
    that holds them both."""
    def main():
        torch.manual_seed(0)
        with adv.torch.record() as rec:
            net = torch.nn.Linear(3, 1)                                   # <- first model
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            net = torch.nn.Linear(3, 1)                                   # <- second model
            loss = net(torch.randn(2, 3)).sum()
            loss.backward()
            opt.step()
        return rec, loss, opt

    rec, loss, opt = main()
    table = rec.explain(loss, opt)
    assert {e.reason for e in table} == {"optimizer_other_instance"}
    text = table[0].message
    assert f":{line_of('first model')}" in text and f":{line_of('second model')}" in text, text
