"""Checkers for notebooks 04 (the dataloader) and 05 (advantages, loss)."""

import tempfile

import torch

from kit import losses, tasks
from kit.checks.core import Mismatch, compare, exercise
from kit.models import load_policy
from kit.trainers import GRPOConfig, GRPOTrainer

# ------------------------------------------------------------- notebook 04


def _trainer(trainer_class, k=3, batch=8, G=4):
    model, tokenizer = load_policy(preset="cpu")
    args = GRPOConfig(tempfile.mkdtemp(), report_to="none", use_cpu=True,
                      per_device_train_batch_size=batch, num_generations=G,
                      steps_per_generation=k, max_completion_length=4)
    return trainer_class(model, [tasks.correctness_reward], args=args,
                         train_dataset=tasks.prompt_dataset("train", n=64),
                         processing_class=tokenizer)


@exercise("get_train_dataloader", stars=2, notebook="04_grpo_dataloader",
          reference=GRPOTrainer.get_train_dataloader, hints=[
              "Start from the stock method: it returns self._get_dataloader("
              "...) with batch_size=self._train_batch_size.",
              "Multiply that batch size by self.args.steps_per_generation.",
              "Keep sampler_fn=self._get_train_sampler: the sampler repeats "
              "each prompt G times and each big batch k times.",
          ])
def grade_get_train_dataloader(candidate):
    trainer = _trainer(candidate, k=3, batch=8, G=4)
    batches = iter(trainer.get_train_dataloader())
    first = [next(batches) for _ in range(3)]
    if len(first[0]) != 8 * 3:
        raise Mismatch(f"a batch holds {len(first[0])} rows; with "
                       "per_device_train_batch_size=8 and steps_per_generation"
                       "=3 it should hold 24")
    prompts = [row["prompt"] for row in first[0]]
    if any(prompts[i] != prompts[i - i % 4] for i in range(len(prompts))):
        raise Mismatch("each prompt should come 4 times in a row "
                       "(num_generations): use "
                       "sampler_fn=self._get_train_sampler")
    if not first[0] == first[1] == first[2]:
        raise Mismatch("the same big batch should come 3 times "
                       "(steps_per_generation), once per step it serves")
    return "one batch of 24 = 8 x 3, served for 3 steps"


def _numbered_generations(trainer):
    """Replace generation by a counter: row i of generation g is g*1000+i."""
    calls = []

    def fake(rows, greedy=False):
        calls.append("greedy" if greedy else "sample")
        n = len(calls) * 1000
        ids = torch.arange(n, n + len(rows)).unsqueeze(1)  # (B, 1)
        return {"prompt_ids": ids, "prompt_mask": torch.ones_like(ids),
                "completion_ids": ids, "completion_mask": torch.ones_like(ids),
                "advantages": ids.squeeze(1).float(),
                "old_per_token_logps": None, "ref_per_token_logps": None}
    trainer._generate_and_score = fake
    return calls


@exercise("prepare_inputs", stars=3, notebook="04_grpo_dataloader",
          reference=GRPOTrainer._prepare_inputs, hints=[
              "Generate only when self._step % k == 0 (or the buffer is "
              "empty): self._generate_and_score(generation_batch).",
              "Cut the generated batch into k slices of equal size and keep "
              "them in self._buffer; serve self._buffer[self._step % k].",
              "Count every call: self._step += 1 after choosing the slice. "
              "In eval mode, generate greedily and serve everything.",
          ])
def grade_prepare_inputs(candidate):
    trainer = _trainer(candidate, k=3, batch=8, G=4)
    calls = _numbered_generations(trainer)
    trainer.model.train()
    big_batches = iter(trainer.get_train_dataloader())
    served = [trainer._prepare_inputs(next(big_batches))["completion_ids"]
              for _ in range(6)]
    if calls != ["sample", "sample"]:
        raise Mismatch(f"6 steps with steps_per_generation=3 should call "
                       f"generation 2 times, not {len(calls)}")
    for step, ids in enumerate(served):
        if len(ids) != 8:
            raise Mismatch(f"step {step} got {len(ids)} completions; each "
                           "step gets a slice of "
                           "per_device_train_batch_size=8")
    for generation in (0, 1):
        slices = torch.cat(served[3 * generation:3 * generation + 3]).flatten()
        expected = torch.arange(24) + 1000 * (generation + 1)
        if sorted(slices.tolist()) != expected.tolist():
            raise Mismatch(f"the 3 slices of generation {generation + 1} "
                           "should cover its 24 completions once each")
    trainer.model.eval()
    trainer._prepare_inputs(next(big_batches))
    if calls[-1] != "greedy":
        raise Mismatch("in evaluation (model.training is False) generate "
                       "greedily: "
                       "self._generate_and_score(batch, greedy=True)")
    return "one generation every 3 steps, 3 slices that cover it"


# ------------------------------------------------------------- notebook 05


@exercise("group_advantages", stars=2, notebook="05_grpo_end_to_end",
          reference=losses.group_advantages, hints=[
              "rewards.view(-1, num_generations) puts each prompt's G "
              "completions on one row: (B, G).",
              "Subtract each row's mean and divide by its std (torch's "
              "default, unbiased) + 1e-4, with keepdim=True to broadcast.",
              "Return the same layout as the input: .view(-1).",
          ])
def grade_group_advantages(candidate):
    g = torch.Generator().manual_seed(0)
    cases = [(torch.rand(12, generator=g), 4), (torch.randint(0, 2, (16,),
             generator=g).float(), 8), (torch.tensor([1.0, 1.0, 0.0, 2.0]), 2)]
    for rewards, G in cases:
        verdict = compare(f"advantages (G={G})", candidate(rewards.clone(), G),
                          losses.group_advantages(rewards, G))
    return f"{verdict} for G = 4, 8 and 2"


def _loss_case(seed, B=4, T=5):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3
    # some ratios fall beyond the clip
    logps = old + torch.randn(B, T, generator=g) * 0.4
    mask = torch.ones(B, T, dtype=torch.long)
    mask[0, 3:] = 0
    mask[2, 1:] = 0
    advantages = torch.tensor([1.0, -1.5, 0.5, -0.2])[:B]
    ref = old - 0.3 * torch.rand(B, T, generator=g)
    return logps, old, advantages, mask, ref


@exercise("grpo_loss", stars=3, notebook="05_grpo_end_to_end",
          reference=losses.grpo_loss, hints=[
              "ratio = exp(per_token_logps − old_per_token_logps): 1 "
              "on-policy.",
              "Per token: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A), with A "
              "unsqueezed to (B, 1). The min is what makes the clip a "
              "pessimistic bound.",
              "Mean over each completion's own tokens (mask!), then mean over "
              "completions; add beta·per_token_kl only when beta > 0.",
          ])
def grade_grpo_loss(candidate):
    for seed, beta in ((0, 0.0), (1, 0.0), (2, 0.1)):
        logps, old, advantages, mask, ref = _loss_case(seed)
        mine = logps.clone().requires_grad_()
        theirs = logps.clone().requires_grad_()
        loss = candidate(mine, old, advantages, mask, epsilon=0.2, beta=beta,
                         ref_per_token_logps=ref)
        expected = losses.grpo_loss(theirs, old, advantages, mask, epsilon=0.2,
                                    beta=beta, ref_per_token_logps=ref)
        if isinstance(loss, torch.Tensor) and loss.dim() > 0:
            raise Mismatch(f"the loss should be one number, got shape "
                           f"{tuple(loss.shape)}")
        verdict = compare(f"loss (beta={beta})", loss, expected.detach())
        expected.backward()
        if not (isinstance(loss, torch.Tensor) and loss.requires_grad):
            raise Mismatch("the loss has no gradient: keep per_token_logps "
                           "in the computation (do not detach it)")
        loss.backward()
        compare(f"gradient (beta={beta})", mine.grad, theirs.grad)
    return f"loss and gradient {verdict}, clipped and with KL"
