"""The Margin Reward Enforcement loss of ER²Score (Sec. 2.3, Eq. 1), term for term.

For K pairs (accepted w, rejected l) from the same reference, N criteria, rewards r [K, N] and the
teacher's sub-scores s [K, N] (higher = better):
    m_ij = s_w,ij - s_l,ij;  t_w = 1 if m_ij > 0 else -1;  m_i = sum_j s_w,ij - sum_j s_l,ij > 0
    L_ind,i = 1/N sum_j [ 1(s_w != s_l) ReLU(-t_w (r_w - r_l) + t_w m_ij) + (1 - 1(s_w != s_l)) ReLU(|r_w - r_l| - c) ]
    L_tot,i = ReLU(-(sum_j r_w,ij - sum_j r_l,ij) + m_i)
    L_MRE   = sum_i [ L_ind,i + lambda L_tot,i ]          (c = 1e-2; lambda balances the two terms)
"""
from __future__ import annotations


def mre_loss(r_w, r_l, s_w, s_l, lam: float = 1.0, c: float = 1e-2, reduction: str = "sum"):
    """r_w, r_l: rewards [K, N] (tensors); s_w, s_l: sub-scores [K, N]. reduction "sum" is Eq. (1); "mean"
    divides by K (same minimiser, a learning rate that does not depend on the batch size)."""
    import torch
    import torch.nn.functional as F

    s_w, s_l = s_w.to(r_w.dtype), s_l.to(r_w.dtype)
    m = s_w - s_l
    differs = (m != 0).to(r_w.dtype)
    t_w = torch.where(m > 0, torch.ones_like(m), -torch.ones_like(m))
    diff = r_w - r_l
    individual = differs * F.relu(-t_w * diff + t_w * m) + (1 - differs) * F.relu(diff.abs() - c)
    l_ind = individual.mean(dim=1)  # 1/N sum_j
    l_tot = F.relu(-(r_w.sum(dim=1) - r_l.sum(dim=1)) + m.sum(dim=1))
    per_pair = l_ind + lam * l_tot
    return per_pair.sum() if reduction == "sum" else per_pair.mean()
