"""Optimizer patterns of pytorch-optimizer, written out so they run without the library.

* :class:`SAM`: ``pytorch_optimizer/optimizer/sam.py`` (``SAM``, after davda54/sam): a
  base optimizer built over the wrapper's own ``param_groups`` dicts, then sharing that
  list and the ``state``; ``first_step`` stores ``old_p`` in the shared state,
  ``second_step`` pops it and calls ``base_optimizer.step()``;
* :class:`Lookahead`: ``pytorch_optimizer/optimizer/lookahead.py``: ``param_groups`` is a
  property returning the wrapped optimizer's list, a ``counter`` int in every group, its
  own ``state`` of slow weights;
* :class:`DebiasedAdam`: the step of pytorch-optimizer's Adam family (``AdaBelief``,
  ``AdamP``, ...): ``group['step']`` an int in the group, bias corrections from
  ``BaseOptimizer.debias`` (``1.0 - math.pow(beta, step)``,
  ``pytorch_optimizer/base/optimizer.py``);
* :class:`AdaBelief`: torch-optimizer's (``torch_optimizer/adabelief.py``): an int
  ``state['step']`` per parameter, made at the first step.

Plain torch only: ``tests/harm_scenarios.py`` runs them in a process that never imports
dynscalar.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["SAM", "AdaBelief", "DebiasedAdam", "Lookahead", "state_of"]


class SAM(torch.optim.Optimizer):
    """Sharpness-aware minimization: ``step(closure)`` perturbs the weights by ``rho``
    along the gradient, recomputes the gradient there and steps the base optimizer."""

    def __init__(
        self, params: Any, base_optimizer: type[torch.optim.Optimizer], rho: float, **kwargs: Any
    ) -> None:
        super().__init__(params, {"rho": rho, **kwargs})
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.state = self.base_optimizer.state

    @torch.no_grad()
    def first_step(self, zero_grad: bool = False) -> None:
        params = [p for group in self.param_groups for p in group["params"]]
        grad_norm = torch.stack([p.grad.norm(p=2) for p in params if p.grad is not None]).norm(p=2)
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.clone()
                p.add_(p.grad * scale.to(p))
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad: bool = False) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if "old_p" in self.state[p]:
                    p.copy_(self.state[p].pop("old_p"))
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any]) -> None:  # type: ignore[override]
        self.first_step(zero_grad=True)
        with torch.enable_grad():
            closure()
        self.second_step()


class Lookahead(torch.optim.Optimizer):
    """Every ``k`` steps of the wrapped optimizer, interpolate toward slow weights."""

    def __init__(self, optimizer: torch.optim.Optimizer, k: int = 3, alpha: float = 0.5) -> None:
        self.optimizer = optimizer
        self._optimizer_step_pre_hooks: dict[int, Any] = {}
        self._optimizer_step_post_hooks: dict[int, Any] = {}
        self.alpha = alpha
        self.k = k
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for group in self.param_groups:
            group.setdefault("counter", 0)
            for p in group["params"]:
                self.state[p]["slow_params"] = p.detach().clone()
        self.defaults = {"lookahead_alpha": alpha, "lookahead_k": k, **optimizer.defaults}

    @property  # type: ignore[override]
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def update(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            slow = self.state[p]["slow_params"]
            p.lerp_(slow, 1.0 - self.alpha)
            slow.copy_(p)

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = self.optimizer.step(closure)
        for group in self.param_groups:
            group["counter"] += 1
            if group["counter"] >= self.k:
                group["counter"] = 0
                self.update(group)
        return loss


class AdaBelief(torch.optim.Optimizer):
    """torch-optimizer's AdaBelief step: a per-parameter int ``state['step']`` in the bias
    corrections, the group's ``lr`` divided by one of them."""

    def __init__(self, params: Any, lr: float) -> None:
        super().__init__(params, {"lr": lr, "betas": (0.9, 0.999), "eps": 1e-16})

    @torch.no_grad()
    def step(self) -> None:  # type: ignore[override]
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_var"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_var = state["exp_avg"], state["exp_avg_var"]
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                exp_avg.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                residual = p.grad - exp_avg
                exp_avg_var.mul_(beta2).addcmul_(residual, residual, value=1 - beta2)
                denom = exp_avg_var.add_(group["eps"]).sqrt() / math.sqrt(bias_correction2)
                step_size = group["lr"] / bias_correction1
                p.addcdiv_(exp_avg, denom.add_(group["eps"]), value=-step_size)


class DebiasedAdam(torch.optim.Optimizer):
    """Adam as pytorch-optimizer writes it: ``group['step']`` counts the steps and the
    bias corrections are ``debias(beta, step) = 1.0 - math.pow(beta, step)``."""

    def __init__(
        self, params: Any, lr: float = 1e-2, betas: tuple[float, float] = (0.9, 0.999)
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": 1e-8})

    @staticmethod
    def debias(beta: float, step: int) -> float:
        return 1.0 - math.pow(beta, step)

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        for group in self.param_groups:
            if "step" not in group:
                group["step"] = 0
            group["step"] += 1
            beta1, beta2 = group["betas"]
            bias_correction1 = self.debias(beta1, group["step"])
            bias_correction2_sq = math.sqrt(self.debias(beta2, group["step"]))
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                de_nom = (exp_avg_sq.sqrt() / bias_correction2_sq).add_(group["eps"])
                p.addcdiv_(exp_avg, de_nom, value=-group["lr"] / bias_correction1)
        return None


def state_of(optimizer: torch.optim.Optimizer) -> tuple[list[Any], list[dict[str, Any]]]:
    """An optimizer's state as plain data to compare: per parameter, in parameter order, its
    entries (tensors cloned); and the param groups without their parameters.  Stock torch's
    compiled step writes ``capturable: True`` into a group it writes back
    (``OptimizerVariable._set_capturable``): that key is left out."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    per_param = [
        {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in optimizer.state[p].items()}
        for p in params
        if p in optimizer.state
    ]
    groups = [
        {k: v for k, v in group.items() if k not in ("params", "capturable")}
        for group in optimizer.param_groups
    ]
    return per_param, groups
