"""The backward formulas of the recurrent layers, read as ``SimpleRNN.backward_text`` (see ``Layer.backward_text``).

They sit beside :mod:`.recurrent` (which is at its size limit); one entry per class, in ḡ_x / ḡ_y.
Backpropagation through time: each step's pre-activation gradient ḡ_z(t) collects ḡ_h(t) from the
output and from step t+1, and every weight's gradient is a sum over the steps.
"""

TEXTS = {
    "SimpleRNN": {"x": "ḡ_x(t) = ḡ_z(t) · W_xᵀ; ḡ_z(t) = (ḡ_y(t) + ḡ_z(t+1) · W_hᵀ) ⊙ (1 − h(t)²)",
                  "kernel": "ḡ_W_x = Σ_t x(t)ᵀ · ḡ_z(t)", "recurrent_kernel": "ḡ_W_h = Σ_t h(t−1)ᵀ · ḡ_z(t)",
                  "bias": "ḡ_b = Σ_t Σ_batch ḡ_z(t)"},     # h(t) = tanh(x(t)·W_x + h(t−1)·W_h + b)
    "LSTM": {"x": "ḡ_x(t) = [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t) · W_xᵀ; ḡ_c(t) = ḡ_h ⊙ o ⊙ (1 − tanh² c) + ḡ_c(t+1) ⊙ f(t+1); "
                  "ḡ_i = ḡ_c ⊙ c̃ ⊙ i(1−i), ḡ_f = ḡ_c ⊙ c(t−1) ⊙ f(1−f); "
                  "ḡ_o = ḡ_h ⊙ tanh c ⊙ o(1−o), ḡ_c̃ = ḡ_c ⊙ i ⊙ (1−c̃²)",
             "kernel": "ḡ_W_x = Σ_t x(t)ᵀ · [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t)",
             "recurrent_kernel": "ḡ_W_h = Σ_t h(t−1)ᵀ · [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t)",
             "bias": "ḡ_b = Σ_t Σ_batch [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t)"},
    "GRU": {"x": "ḡ_x(t) = [ḡ_z ḡ_r ḡ_h̃](t) · W_xᵀ; ḡ_z = ḡ_h ⊙ (h(t−1) − h̃) ⊙ z(1−z), ḡ_h̃ = ḡ_h ⊙ (1−z) ⊙ (1−h̃²); "
                   "ḡ_h(t−1) = ḡ_h ⊙ z + [ḡ_z ḡ_r ḡ_h̃] · W_hᵀ",
            "kernel": "ḡ_W_x = Σ_t x(t)ᵀ · [ḡ_z ḡ_r ḡ_h̃](t)",
            "recurrent_kernel": "ḡ_W_h = Σ_t h(t−1)ᵀ · [ḡ_z ḡ_r ḡ_h̃](t)", "bias": "ḡ_b = Σ_t Σ_batch [ḡ_z ḡ_r ḡ_h̃](t)"},
}


class ByClass:
    """A class attribute whose value is the entry of :data:`TEXTS` for the class it is read on."""

    def __get__(self, obj, owner):
        return TEXTS.get(owner.__name__)
