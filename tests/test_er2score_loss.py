"""MRE loss (ER²Score Eq. 1) against hand-computed values for the three margin cases."""
from __future__ import annotations

import pytest
import torch

from radmetrics.er2score.loss import mre_loss


def one(r_w, r_l, s_w, s_l, **kw):
    t = lambda v: torch.tensor([v], dtype=torch.float32)  # noqa: E731
    return mre_loss(t(r_w), t(r_l), t(s_w), t(s_l), **kw).item()


def test_positive_margin():
    # N=1, s_w=3, s_l=1 -> m=2, t_w=1; r_w - r_l = 0.5: L_ind = ReLU(-0.5 + 2) = 1.5
    # m_i = 2: L_tot = ReLU(-0.5 + 2) = 1.5; lambda = 1 -> 3.0
    assert one([1.0], [0.5], [3.0], [1.0]) == pytest.approx(3.0)
    # rewards already apart by more than the margin: no loss
    assert one([4.0], [1.0], [3.0], [1.0]) == pytest.approx(0.0)


def test_negative_margin():
    # N=2. criterion 1: s 1 vs 3 -> m=-2, t_w=-1; r_w - r_l = 0.5:
    #   -t_w (r_w - r_l) + t_w m = 0.5 + (-1)(-2) = 2.5
    # criterion 2: s 5 vs 0 -> m=5, t_w=1; r_w - r_l = 1: ReLU(-1 + 5) = 4
    # L_ind = (2.5 + 4) / 2 = 3.25; total margin = (1+5) - (3+0) = 3; sum r_w - sum r_l = 1.5:
    # L_tot = ReLU(-1.5 + 3) = 1.5; lambda = 0.5 -> 3.25 + 0.75 = 4.0
    r_w, r_l = [1.0, 2.0], [0.5, 1.0]
    assert one(r_w, r_l, [1.0, 5.0], [3.0, 0.0], lam=0.5) == pytest.approx(4.0)
    # negative margin respected: r_w - r_l = -3 <= m = -2 for criterion 1 -> its term is ReLU(-3 + 2) = 0
    assert one([0.0, 6.0], [3.0, 0.0], [1.0, 5.0], [3.0, 0.0], lam=0.0) == pytest.approx((0 + 0) / 2)


def test_zero_margin_uses_c():
    # N=1, equal sub-scores -> indicator 0: ReLU(|r_w - r_l| - c) = ReLU(0.3 - 0.01) = 0.29;
    # total margin 0: L_tot = ReLU(-(0.3) + 0) = 0
    assert one([0.8], [0.5], [2.0], [2.0]) == pytest.approx(0.29)
    # within c: no loss
    assert one([0.505], [0.5], [2.0], [2.0]) == pytest.approx(0.0)
    assert one([0.8], [0.5], [2.0], [2.0], c=0.1) == pytest.approx(0.2)


def test_sum_over_pairs_and_gradients():
    r_w = torch.tensor([[1.0, 0.0], [0.0, 0.0]], requires_grad=True)
    r_l = torch.zeros(2, 2)
    s_w, s_l = torch.tensor([[2.0, 0.0], [1.0, 1.0]]), torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    loss = mre_loss(r_w, r_l, s_w, s_l)
    # pair 1: crit1 m=2, diff 1 -> 1; crit2 m=0, |0| - c -> 0; L_ind = 0.5; L_tot = ReLU(-1 + 2) = 1 -> 1.5
    # pair 2: crit1 m=1, diff 0 -> 1; crit2 m=0 -> 0; L_ind = 0.5; L_tot = ReLU(0 + 1) = 1 -> 1.5
    assert loss.item() == pytest.approx(3.0)
    assert mre_loss(r_w, r_l, s_w, s_l, reduction="mean").item() == pytest.approx(1.5)
    loss.backward()
    assert r_w.grad[0, 0] < 0  # raising the accepted report's reward lowers the loss
