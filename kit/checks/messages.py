"""Every line the checkers print, in one table for `kit.i18n.text`.

Keys: the machinery's lines by what they say ("verdict.passed",
"refused.timeout"); each exercise's hint ladder as "<exercise>.hint.<n>"
(n from 1, the gentlest); each named mistake's three lines as
"<exercise>.<mistake>.title" (a few words), ".why" (what is wrong) and
".hint" (how to fix it). A mistake keeps its code and id in its checker;
its words live here, so a second language is this table's "ja" half.
"""

MESSAGES = {"en": {
    # ------------------------------------------------ verdicts (report.py)
    # every verdict line carries a word, so it reads where the emoji font
    # is missing and the glyph shows as a box
    "verdict.passed": "✅ passed",
    "verdict.failed": "❌ failed",
    "verdict.not attempted": "⏸  not attempted",
    "verdict.line": "{verdict} · {id} {stars}: {message}",
    "note": "ℹ️  note: {note}",
    "help": "   {line}",

    # --------------------------------------------- what evaluate() says
    "matches": "matches the reference",
    "stub": "replace the `raise NotImplementedError` with your code",
    "still the stub": "still the stub: {stub}",
    "time limit":
        "your code ran for more than {timeout:g} s (an endless loop?)",
    "raised": "your code raised {error}",
    "mistake": "{title} — {why}",
    "checker failed":
        "the checker itself failed ({error}): a bug in the kit, not in your "
        "answer; please report it",
    "uses.not done": "exercise {number} is not done yet: using the kit's "
                     "`{name}` to check this one",
    "uses.not passing": "exercise {number} does not pass its check: using "
                        "the kit's `{name}` to check this one",

    # ------------------------------------------------------- refusals
    "refused.unknown id":
        "there is no exercise {id!r}: the exercises are {known}",
    "refused.timeout":
        "check({id!r}, ..., timeout={timeout!r}): timeout is the seconds "
        "your code may run, a number > 0, e.g. timeout=60",
    "refused.hint level":
        "{id} has hints {levels}: try hint({id!r}, 1), not level {level!r}",
    "refused.unknown id.why": "no exercise {id!r}",
    "refused.timeout.why": "timeout={timeout!r}",
    "not checked": "not checked: {why}",
    "refused.strict": "check() refused: {why}",

    # ----------------------------------------- comparing (compare.py)
    "compare.in place":
        "your function changed its input `{name}` in place: work on new "
        "tensors (x = x * m, not x.mul_(m) or x[...] = ...) — the caller "
        "still needs its inputs",
    "compare.value": "{name}: yours {actual!r}, expected {wanted!r}",
    "compare.no gradient": "{name}: your result carries no gradient",
    "compare.not a tensor": "{name} should be a torch.Tensor, got {kind}",
    "compare.not one number":
        "{name} should be one number (a 0-d tensor), got shape {shape}",
    "compare.shape": "{name} has shape {shape}, expected {expected}",
    "compare.dtype": "{name} has dtype {dtype}, expected {expected}",
    "compare.detached":
        "{name} carries no gradient: it was cut from the graph (.detach(), "
        ".item(), torch.tensor(...) or torch.no_grad()), so training cannot "
        "learn from it",
    "facts.raised": "your {what} raised {error}",
    "compare.close": "close (max difference {difference:.1e})",
    "compare.differs":
        "{name} differs from the reference: max difference {difference:.3g} "
        "(yours {actual}, expected {expected})",

    # --------------------------------- the answer's kind (blame.py)
    "kind.start": "check({id!r}, ...) expects ",
    "kind.class": "a class, a subclass of {base}",
    "kind.class method": "a class, a subclass of {base} with your {method}",
    "kind.instance":
        ", got an instance: pass the class itself, {name}, not {name}(...)",
    "kind.got": ", got {kind}",
    "kind.not a subclass":
        ", got the class {name}, which does not subclass {base}",
    "kind.function": "a function like {name}{signature}, got {kind}",
    "kind.dict": "a dict, got {kind}",
    "kind.the class": "the class {name}",
    "kind.the function": "the function {name}",

    # ------------------------------------------- hint(), help (advice.py)
    "hint.line": "hint {level}/{count}: {text}",
    "hint.named": "hint: {text}",
    # what the machinery can tell apart, and the hint for each where the
    # exercise names no rung of its own
    "symptom.detached":
        "the result carries no gradient: build it from the inputs with "
        "torch operations, with no .detach(), .item(), torch.tensor(...) or "
        "torch.no_grad() on the way (the Trainer calls .backward() on it)",
    "symptom.shape":
        "return what the docstring's `Shape:` line says: print x.shape and "
        "x.dtype on the way to see where they change",
    "symptom.in_place":
        "leave the inputs as they came: build new tensors (x = "
        "x.masked_fill(m, 0), x = x * m) instead of editing them (x[...] = "
        "..., x.mul_(...)); the caller uses them again",
    "symptom.scaled":
        "yours is {factor:.4g}× the reference wherever it differs: the rest "
        "is right, so look for a constant factor (what you divide by, a sum "
        "where a mean belongs, an extra multiplier)",
    "symptom.timeout":
        "a loop whose condition never changes, or one over far more items "
        "than the inputs hold: print inside it on small inputs to see which",
    "symptom.crash":
        "read the error's last line, then run your code by hand on small "
        "inputs and print the shapes just before the line that raised",

    # causal_lm_loss
    "causal_lm_loss.hint.1":
        "Position t predicts token t+1: drop the last position of the logits "
        "and the first of the labels.",
    "causal_lm_loss.hint.2":
        "F.cross_entropy wants (N, V) scores and (N,) targets: flatten both "
        "with .reshape(-1, V) and .reshape(-1).",
    "causal_lm_loss.hint.3":
        "Leave -100 in the labels: ignore_index=-100 skips prompt and "
        "padding, and the default reduction='mean' takes one mean over the "
        "labelled tokens of the whole batch (not per row, not a sum).",
    "causal_lm_loss.hint.4":
        "The Trainer calls .backward() on your loss: keep it attached to the "
        "logits, with no .detach(), .item() or torch.no_grad().",
    "causal_lm_loss.not_shifted.title": "not shifted",
    "causal_lm_loss.not_shifted.why":
        "position t must predict token t+1, so drop the last logit and the "
        "first label",
    "causal_lm_loss.not_shifted.hint":
        "compare logits[:, :-1] with labels[:, 1:]",
    "causal_lm_loss.shifted_wrong_way.title": "shifted the wrong way",
    "causal_lm_loss.shifted_wrong_way.why":
        "logits[:, 1:] against labels[:, :-1] asks each position for the "
        "token *before* it",
    "causal_lm_loss.shifted_wrong_way.hint":
        "drop the *last* logit and the *first* label: logits[:, :-1], "
        "labels[:, 1:]",
    "causal_lm_loss.minus_100_counted.title": "-100 counted",
    "causal_lm_loss.minus_100_counted.why":
        "prompt and padding positions count in the mean, so the loss is too "
        "small",
    "causal_lm_loss.minus_100_counted.hint":
        "average over labelled tokens only: ignore_index=-100 does it",
    "causal_lm_loss.minus_100_as_token_0.title": "-100 read as token 0",
    "causal_lm_loss.minus_100_as_token_0.why":
        "replacing -100 by 0 makes every prompt and padding position a "
        "target (token 0), and they count in the mean",
    "causal_lm_loss.minus_100_as_token_0.hint":
        "leave -100 in the labels: F.cross_entropy skips it "
        "(ignore_index=-100)",
    "causal_lm_loss.per_sequence_mean.title": "per-sequence mean",
    "causal_lm_loss.per_sequence_mean.why":
        "a mean per row, then over rows, gives a short answer's tokens more "
        "weight than a long one's",
    "causal_lm_loss.per_sequence_mean.hint":
        "one mean over all labelled tokens of the batch: flatten first, then "
        "F.cross_entropy",
    "causal_lm_loss.sum_not_divided.title": "sum without dividing",
    "causal_lm_loss.sum_not_divided.why":
        "a sum grows with the number of tokens: the loss should be a mean",
    "causal_lm_loss.sum_not_divided.hint":
        "keep F.cross_entropy's default reduction='mean'",
    "causal_lm_loss.detached.title": "detached loss",
    "causal_lm_loss.detached.why":
        "the loss carries no gradient (.detach(), .item() or "
        "torch.no_grad()), so training stops with 'element 0 of tensors does "
        "not require grad'",
    "causal_lm_loss.detached.hint":
        "return the tensor F.cross_entropy gives, with autograd on",

    # compute_loss
    "compute_loss.hint.1":
        "Take the labels out of `inputs` (inputs.pop('labels')), run "
        "model(**inputs) and give outputs.logits to your loss.",
    "compute_loss.hint.2":
        "Return just the loss, or (loss, outputs) when return_outputs is "
        "True: evaluate() asks for both.",
    "compute_loss.hint.3":
        "num_items_in_batch is the token count of the whole accumulated "
        "batch, or None (evaluation): a mean may ignore it; a sum is divided "
        "by it, only when it is given, and by nothing else (it already spans "
        "every micro-batch).",
    "compute_loss.hint.4":
        "The Trainer calls .backward() on the loss: compute it with autograd "
        "on, no .detach(), .item() or torch.no_grad().",
    "compute_loss.always_tuple.title": "always a tuple",
    "compute_loss.always_tuple.why":
        "training calls compute_loss with return_outputs=False and wants the "
        "loss alone",
    "compute_loss.always_tuple.hint":
        "return (loss, outputs) if return_outputs else loss",
    "compute_loss.ignores_return_outputs.title": "ignores return_outputs",
    "compute_loss.ignores_return_outputs.why":
        "evaluate() asks for (loss, outputs) with return_outputs=True",
    "compute_loss.ignores_return_outputs.hint":
        "return (loss, outputs) if return_outputs else loss",
    "compute_loss.divides_by_none.title":
        "divides by a None num_items_in_batch",
    "compute_loss.divides_by_none.why":
        "evaluation (and any call outside training) passes "
        "num_items_in_batch=None",
    "compute_loss.divides_by_none.hint":
        "divide by num_items_in_batch only when it is given; else take the "
        "mean",
    "compute_loss.divides_by_ga_too.title":
        "divides by the accumulation steps too",
    "compute_loss.divides_by_ga_too.why":
        "num_items_in_batch already counts the tokens of every micro-batch: "
        "dividing also by gradient_accumulation_steps makes the step GA "
        "times too small",
    "compute_loss.divides_by_ga_too.hint":
        "divide the summed loss by num_items_in_batch alone",
    "compute_loss.detached.title": "detached loss",
    "compute_loss.detached.why":
        "the loss carries no gradient to the model (.detach(), .item() or "
        "torch.no_grad()), so training stops with 'element 0 of tensors does "
        "not require grad'",
    "compute_loss.detached.hint":
        "run the model and the loss with autograd on, and return the loss "
        "tensor itself",
    "compute_loss.judge.init":
        "{name}(model=..., args=..., processing_class=...) raised {error}: "
        "its __init__ must take the Trainer's arguments",
    "compute_loss.judge.passed": "{verdict} against the model's own loss",
    "compute_loss.judge.ahead":
        "{verdict}, and it honours num_items_in_batch: a step ahead of this "
        "exercise",
    "compute_loss.judge.tuple":
        "with return_outputs=False, return the loss alone, not a tuple "
        "({name})",
    "compute_loss.judge.both":
        "with return_outputs=True, return (loss, outputs)",
    "compute_loss.judge.outputs":
        "the second item should be the model's outputs, with .logits",

    # stop_callback
    "stop_callback.hint.1":
        "Override on_log(self, args, state, control, logs=None, **kwargs): "
        "the Trainer calls it with each log, a dict of numbers.",
    "stop_callback.hint.2":
        "Not every log has a 'loss' (evaluation logs, the final summary): "
        "read it with logs.get('loss') and skip the log when it is None, "
        "rather than reading a missing loss as 0.",
    "stop_callback.hint.3":
        "Set control.should_training_stop = True (should_epoch_stop only "
        "ends the epoch) once the loss is below the target, and return "
        "control.",
    "stop_callback.loss_on_eval_log.title": 'logs["loss"] on an eval log',
    "stop_callback.loss_on_eval_log.why":
        "evaluation logs and the final summary have no 'loss' key, so the "
        "callback crashes the run",
    "stop_callback.loss_on_eval_log.hint":
        "read it with logs.get('loss') and skip the log when it is None",
    "stop_callback.missing_loss_as_zero.title": "a missing loss read as 0",
    "stop_callback.missing_loss_as_zero.why":
        "logs.get('loss', 0) makes an evaluation log look like a loss of 0, "
        "so training stops at the first evaluation",
    "stop_callback.missing_loss_as_zero.hint":
        "logs.get('loss') and skip the log when it is None",
    "stop_callback.should_epoch_stop.title": "should_epoch_stop",
    "stop_callback.should_epoch_stop.why":
        "that flag only ends the current epoch; training goes on",
    "stop_callback.should_epoch_stop.hint":
        "set control.should_training_stop = True",
    "stop_callback.judge.init":
        "{name}(target=1.0) raised {error}: keep __init__(self, target)",
    "stop_callback.judge.raised":
        "on the log {log} your callback raised {error}",
    "stop_callback.judge.epoch":
        "after the log {log} it set should_epoch_stop: that does not stop "
        "training",
    "stop_callback.judge.stopped":
        "with target 1.0 it stopped after the log {log}",
    "stop_callback.judge.kept going":
        "with target 1.0 it kept going after the log {log}",
    "stop_callback.judge.never":
        "in a real run the callback never stopped training",
    "stop_callback.judge.passed": "stops a real run at step {step} of 200",

    # callback_or_subclass
    "callback_or_subclass.stub":
        "answer each request with 'callback' or 'subclass' in place of its "
        "'?'",
    "callback_or_subclass.hint.1":
        "Ask: does the request only need to *see* the loop (when), or must "
        "it change *what* the loop computes?",
    "callback_or_subclass.hint.2":
        "Callbacks get the state and may set control flags; they never see "
        "the loss tensor or the batch before it is used.",
    "callback_or_subclass.judge.undecided":
        "{count} requests still undecided, e.g. {first!r} (yours: "
        "{yours!r}): answer 'callback' or 'subclass'",
    "callback_or_subclass.judge.wrong":
        "{count} of {of} wrong, e.g. {first!r} is a {answer}: {why}",
    "callback_or_subclass.judge.passed": "all {count} requests placed",

    # sequence_logps
    "sequence_logps.hint.1":
        "Same shift as the LM loss: logits[:, :-1] score the tokens "
        "input_ids[:, 1:], and the mask follows: completion_mask[:, 1:].",
    "sequence_logps.hint.2":
        "Stay in log space: log_softmax over the vocabulary, then "
        ".gather(-1, targets.unsqueeze(-1)).squeeze(-1) picks each token's "
        "log-prob. A product of 60 probabilities underflows to 0; a sum of "
        "their logs does not.",
    "sequence_logps.hint.3":
        "Multiply by the mask and .sum(-1): a sum, not a mean — DPO compares "
        "log-probabilities of whole sequences, and prompt and padding tokens "
        "must add nothing.",
    "sequence_logps.hint.4":
        "Keep the graph: no .detach(), no torch.no_grad() — DPO's gradient "
        "flows through these log-probs to the policy.",
    "sequence_logps.not_shifted.title": "not shifted",
    "sequence_logps.not_shifted.why":
        "the logits at t score token t+1, so each token was scored by its "
        "own position",
    "sequence_logps.not_shifted.hint":
        "logits[:, :-1] against input_ids[:, 1:], and completion_mask[:, 1:]",
    "sequence_logps.prompt_included.title": "prompt included",
    "sequence_logps.prompt_included.why":
        "without the mask the prompt's (and padding's) tokens are summed too",
    "sequence_logps.prompt_included.hint":
        "multiply the token log-probs by completion_mask[:, 1:] before the "
        "sum",
    "sequence_logps.mean_not_sum.title": "mean instead of sum",
    "sequence_logps.mean_not_sum.why":
        "DPO compares the log-probability of whole completions: a sum over "
        "their tokens",
    "sequence_logps.mean_not_sum.hint": "drop the division: .sum(-1) alone",
    "sequence_logps.mask_not_shifted.title": "mask not shifted",
    "sequence_logps.mask_not_shifted.why":
        "the token log-probs are shifted (they score tokens 1..T-1) but the "
        "mask is not, so it is off by one",
    "sequence_logps.mask_not_shifted.hint":
        "shift the mask with the tokens: completion_mask[:, 1:]",
    "sequence_logps.log_of_product.title": "log of a product",
    "sequence_logps.log_of_product.why":
        "the probabilities of a long completion multiply to less than "
        "float32 can hold: the product is 0 and its log -inf",
    "sequence_logps.log_of_product.hint":
        "add log-probs instead: log_softmax, gather, then (token_logps * "
        "mask).sum(-1)",
    "sequence_logps.detached.title": "detached log-probs",
    "sequence_logps.detached.why":
        "computed under torch.no_grad() (or .detach()ed), the log-probs "
        "carry no gradient: DPO could not train the policy with them",
    "sequence_logps.detached.hint":
        "drop the no_grad / .detach(): only the reference model runs without "
        "gradients, in compute_loss",

    # dpo_loss
    "dpo_loss.hint.1":
        "First the log-ratios: π_c − ref_c for chosen, π_r − ref_r for "
        "rejected — the reference is what anchors the policy.",
    "dpo_loss.hint.2":
        "The margin is chosen minus rejected: (π_c − ref_c) − (π_r − ref_r). "
        "The other way round trains the policy to prefer the rejected answer.",
    "dpo_loss.hint.3":
        "β multiplies the whole margin, β · (chosen − rejected) — the "
        "published snippet puts it on the chosen side only.",
    "dpo_loss.hint.4":
        "The loss is −F.logsigmoid(β · margin): the log of σ, not σ, and a "
        "minus in front, so that minimising it widens the margin.",
    "dpo_loss.hint.5":
        "Keep one loss per pair, shape (B,), with its gradient: no .mean() — "
        "the trainer divides by the pairs of the whole accumulated step — "
        "and no .detach() on the losses.",
    "dpo_loss.hint.6":
        "The rewards β · log-ratio are only logged: .detach() them.",
    "dpo_loss.published_snippet.title": "the published snippet",
    "dpo_loss.published_snippet.why":
        "β·chosen − rejected multiplies only the chosen side by β",
    "dpo_loss.published_snippet.hint": "brackets: β · (chosen − rejected)",
    "dpo_loss.mean_not_per_pair.title": ".mean() instead of per-pair losses",
    "dpo_loss.mean_not_per_pair.why":
        "the trainer sums the losses and divides by the pairs of the whole "
        "accumulated step",
    "dpo_loss.mean_not_per_pair.hint":
        "return one loss per pair, shape (B,): no .mean()",
    "dpo_loss.rewards_not_detached.title": "rewards not detached",
    "dpo_loss.rewards_not_detached.why":
        "the rewards are only logged; attached, they keep the graph alive",
    "dpo_loss.rewards_not_detached.hint": "beta * chosen_logratios.detach()",
    "dpo_loss.losses_detached.title": "losses detached",
    "dpo_loss.losses_detached.why":
        "the losses are what the Trainer calls .backward() on: detached, "
        "they carry no gradient (only the rewards are for logging)",
    "dpo_loss.losses_detached.hint":
        "return the losses as computed; .detach() only the rewards",
    "dpo_loss.no_reference.title": "no reference",
    "dpo_loss.no_reference.why":
        "the log-ratios are π − ref: without the reference nothing anchors "
        "the policy",
    "dpo_loss.no_reference.hint":
        "subtract ref_chosen_logps and ref_rejected_logps first",
    "dpo_loss.chosen_rejected_swapped.title": "chosen and rejected swapped",
    "dpo_loss.chosen_rejected_swapped.why":
        "the margin is rejected minus chosen: minimising the loss then makes "
        "the rejected answer more likely",
    "dpo_loss.chosen_rejected_swapped.hint":
        "chosen_logratios - rejected_logratios",
    "dpo_loss.sigmoid_not_logsigmoid.title": "sigmoid for logsigmoid",
    "dpo_loss.sigmoid_not_logsigmoid.why":
        "−σ(β·margin) is bounded and flat where the policy is most wrong: "
        "DPO's loss is −log σ",
    "dpo_loss.sigmoid_not_logsigmoid.hint":
        "-F.logsigmoid(beta * (chosen_logratios - rejected_logratios))",
    "dpo_loss.no_minus.title": "no minus sign",
    "dpo_loss.no_minus.why":
        "log σ(β·margin) is the log-likelihood to maximise; the Trainer "
        "minimises, so that narrows the margin",
    "dpo_loss.no_minus.hint": "put a minus in front: -F.logsigmoid(...)",
    "dpo_loss.judge.not three": "returned {kind}, not a tuple of three",
    "dpo_loss.judge.three":
        "{out}: return three tensors (losses, chosen_rewards, "
        "rejected_rewards)",
    "dpo_loss.judge.no gradient":
        "the losses have no gradient: do not .detach() them (only the "
        "rewards), nor compute them under torch.no_grad()",
    "dpo_loss.judge.rewards": "the rewards are for logging: .detach() them",
    "dpo_loss.judge.passed": "{verdict} for beta 0.1 and 0.5",

    # dpo_snippet
    "dpo_snippet.hint.1":
        "Operator precedence: in β·a − b, β multiplies a alone.",
    "dpo_snippet.hint.2":
        "Write the paper's β·(a − b) with the brackets: β scales the whole "
        "difference, neither side alone.",
    "dpo_snippet.hint.3":
        "Keep the minus in front: the loss is −log σ(β·(a − b)).",
    "dpo_snippet.published_snippet.title": "the published snippet",
    "dpo_snippet.published_snippet.why":
        "β·a − b multiplies only the chosen side by β",
    "dpo_snippet.published_snippet.hint":
        "brackets: β · (chosen_scores − rejected_scores)",
    "dpo_snippet.beta_on_rejected.title": "β on the rejected side",
    "dpo_snippet.beta_on_rejected.why":
        "a − β·b scales only the rejected side: the same slip as the "
        "snippet's, mirrored",
    "dpo_snippet.beta_on_rejected.hint":
        "brackets: β · (chosen_scores − rejected_scores)",
    "dpo_snippet.no_minus.title": "no minus sign",
    "dpo_snippet.no_minus.why":
        "log σ(...) is what DPO maximises; the loss to minimise is its "
        "negative",
    "dpo_snippet.no_minus.hint":
        "-F.logsigmoid(beta * (chosen_scores - rejected_scores))",

    # dpo_compute_loss
    "dpo_compute_loss.hint.1":
        "One forward pass of the policy over inputs['input_ids'] (with its "
        "attention_mask); sequence_logps with inputs['completion_mask'] — "
        "not the attention mask, which covers the prompt too — gives (2B,) "
        "log-probs.",
    "dpo_compute_loss.hint.2":
        "The reference runs under torch.no_grad(): self.ref_model(...), the "
        "same inputs. Not the policy, detached: its log-ratios would all be "
        "0.",
    "dpo_compute_loss.hint.3":
        "The collator stacks [chosen; rejected]: chosen, rejected = "
        "logps.chunk(2), in that order, for the reference too.",
    "dpo_compute_loss.hint.4":
        "Only the reference goes under no_grad: the policy's forward must "
        "keep its graph, or the loss has no gradient to train with.",
    "dpo_compute_loss.hint.5":
        "Return one number: losses.sum() / (num_items_in_batch or "
        "len(losses)). num_items_in_batch already counts the pairs of every "
        "micro-batch of the step: no .mean(), no division by "
        "gradient_accumulation_steps.",
    "dpo_compute_loss.attention_mask_as_completion_mask.title":
        "attention mask as completion mask",
    "dpo_compute_loss.attention_mask_as_completion_mask.why":
        "the prompt's log-probs cancel in the loss, but the logged log-probs "
        "and rewards count the prompt too",
    "dpo_compute_loss.attention_mask_as_completion_mask.hint":
        "pass inputs['completion_mask'] to sequence_logps",
    "dpo_compute_loss.policy_as_reference.title":
        "policy as its own reference",
    "dpo_compute_loss.policy_as_reference.why":
        "with ref = π (detached) every log-ratio is 0: the loss is log 2 "
        "whatever the policy does",
    "dpo_compute_loss.policy_as_reference.hint":
        "run self.ref_model under torch.no_grad() for the reference log-probs",
    "dpo_compute_loss.mean_over_micro_batch.title": "mean over a micro-batch",
    "dpo_compute_loss.mean_over_micro_batch.why":
        "under gradient accumulation each micro-batch's mean gets the same "
        "weight, whatever its size",
    "dpo_compute_loss.mean_over_micro_batch.hint":
        "return losses.sum() / (num_items_in_batch or len(losses))",
    "dpo_compute_loss.chunks_swapped.title": "chosen and rejected swapped",
    "dpo_compute_loss.chunks_swapped.why":
        "the first half of the batch is the chosen answers: taken as "
        "rejected, DPO learns to prefer the rejected ones",
    "dpo_compute_loss.chunks_swapped.hint":
        "chosen, rejected = logps.chunk(2) (and ref_chosen, ref_rejected "
        "likewise)",
    "dpo_compute_loss.detached_loss.title": "detached loss",
    "dpo_compute_loss.detached_loss.why":
        "the policy's forward ran under torch.no_grad() (or the loss was "
        ".detach()ed): training stops at 'element 0 of tensors does not "
        "require grad'",
    "dpo_compute_loss.detached_loss.hint":
        "keep only the reference under torch.no_grad()",
    "dpo_compute_loss.per_pair_losses.title": "per-pair losses returned",
    "dpo_compute_loss.per_pair_losses.why":
        "the Trainer calls .backward() on what compute_loss returns: it "
        "needs one number, not one per pair",
    "dpo_compute_loss.per_pair_losses.hint":
        "return losses.sum() / (num_items_in_batch or len(losses))",
    "dpo_compute_loss.divides_by_ga.title": "divided by GA as well",
    "dpo_compute_loss.divides_by_ga.why":
        "num_items_in_batch already counts the pairs of all "
        "gradient_accumulation_steps micro-batches: dividing by GA again "
        "makes the gradient GA times too small",
    "dpo_compute_loss.divides_by_ga.hint":
        "losses.sum() / (num_items_in_batch or len(losses)), nothing more",
    "dpo_compute_loss.judge.tuple":
        "with return_outputs=False, return the loss alone",
    "dpo_compute_loss.judge.shape":
        "compute_loss should return one number (a 0-d tensor) for the "
        "Trainer's .backward(), got shape {shape}: return losses.sum() / "
        "(num_items_in_batch or len(losses))",
    "dpo_compute_loss.judge.gradient":
        "the gradient of your loss could not be taken: {error}",
    "dpo_compute_loss.judge.no gradient":
        "the loss has no gradient: do not detach the policy's log-probs "
        "(only the reference's are computed under no_grad)",
    "dpo_compute_loss.judge.both":
        "with return_outputs=True, return (loss, outputs)",
    "dpo_compute_loss.judge.nothing logged":
        "nothing logged: call self._remember(chosen_rewards, "
        "rejected_rewards, chosen, rejected) — the live plot and evaluate() "
        "read rewards/margins from it",
    "dpo_compute_loss.judge.missing":
        "the logs have no {name!r}: pass all four to self._remember(...)",
    "dpo_compute_loss.judge.passed":
        "loss, gradient and logs {verdict} against kit's DPOTrainer",

    # get_train_dataloader
    "get_train_dataloader.hint.1":
        "Start from the stock method: it returns self._get_dataloader(...) "
        "with batch_size=self._train_batch_size — so accelerate prepares the "
        "loader, as for any Trainer.",
    "get_train_dataloader.hint.2":
        "Multiply that batch size by self.args.steps_per_generation: one "
        "batch holds the completions of k steps.",
    "get_train_dataloader.hint.3":
        "The factor is k exactly: not num_generations (the batch size "
        "already counts completions), not k + 1, not "
        "gradient_accumulation_steps (often equal to k, not always).",
    "get_train_dataloader.hint.4":
        "Keep sampler_fn=self._get_train_sampler: the sampler repeats each "
        "prompt G times and each big batch k times.",
    "get_train_dataloader.no_times_k.title": "no ×k",
    "get_train_dataloader.no_times_k.why":
        "one batch must hold the prompts of k steps: the stock batch size "
        "serves one",
    "get_train_dataloader.no_times_k.hint":
        "batch_size=self._train_batch_size * self.args.steps_per_generation",
    "get_train_dataloader.times_G.title": "×G",
    "get_train_dataloader.times_G.why":
        "num_generations is already in the batch size (it counts "
        "completions); the batch grows with the steps it serves, k",
    "get_train_dataloader.times_G.hint":
        "multiply by self.args.steps_per_generation, not num_generations",
    "get_train_dataloader.times_k_plus_1.title": "×(k+1)",
    "get_train_dataloader.times_k_plus_1.why":
        "a batch serves k steps, not k + 1: the extra slice is generated and "
        "never trained on",
    "get_train_dataloader.times_k_plus_1.hint":
        "multiply by self.args.steps_per_generation alone",
    "get_train_dataloader.times_GA.title": "×GA",
    "get_train_dataloader.times_GA.why":
        "gradient_accumulation_steps counts micro-steps per optimizer step; "
        "the buffer serves steps_per_generation of them (k = GA is only the "
        "default)",
    "get_train_dataloader.times_GA.hint":
        "multiply by self.args.steps_per_generation",
    "get_train_dataloader.no_sampler.title": "no sampler",
    "get_train_dataloader.no_sampler.why":
        "without GRPO's sampler each prompt comes once: no groups of G, no "
        "batch served k times",
    "get_train_dataloader.no_sampler.hint":
        "pass sampler_fn=self._get_train_sampler",
    "get_train_dataloader.plain_dataloader.title": "a plain DataLoader",
    "get_train_dataloader.plain_dataloader.why":
        "the Trainer's loaders go through accelerate (devices, several "
        "processes, resuming)",
    "get_train_dataloader.plain_dataloader.hint":
        "build it with self._get_dataloader(...), as the stock method does",
    "get_train_dataloader.problem.rows":
        "a batch holds {first} rows with per_device_train_batch_size=8, "
        "steps_per_generation=3 (and {second} with 4 and 2): it should hold "
        "8 × 3 = 24 (and 4 × 2 = 8), the completions of k steps",
    "get_train_dataloader.problem.grouped":
        "each prompt should come num_generations times in a row: use "
        "sampler_fn=self._get_train_sampler",
    "get_train_dataloader.problem.repeated":
        "the same big batch should come steps_per_generation times, once per "
        "step it serves: use sampler_fn=self._get_train_sampler",
    "get_train_dataloader.problem.prepared":
        "a plain DataLoader: build it with self._get_dataloader(...) so "
        "accelerate prepares it",
    "get_train_dataloader.judge.passed":
        "one batch of 24 = 8 × 3, served for 3 steps (and 8 = 4 × 2)",

    # prepare_inputs
    "prepare_inputs.hint.1":
        "Generate only when self._step % k == 0 (or the buffer is empty): "
        "self._generate_and_score(generation_batch). In between, serve from "
        "the buffer.",
    "prepare_inputs.hint.2":
        "Use the step, then count it: choose the slice "
        "self._buffer[self._step % k], and only then self._step += 1 — every "
        "call, or the buffer is refilled at the wrong step.",
    "prepare_inputs.hint.3":
        "Cut the generated batch into k slices of equal size, keeping every "
        "key (None stays None) in each slice.",
    "prepare_inputs.hint.4":
        "Shuffle the rows before cutting, with one order for every key: "
        "order = torch.randperm(n), then value[rows] for rows in "
        "order.chunk(k). Each slice mixes prompts, and row i of every key is "
        "still the same completion.",
    "prepare_inputs.hint.5":
        "In eval mode (not self.model.training), generate greedily and serve "
        "everything: no buffer.",
    "prepare_inputs.generates_every_step.title": "generates every step",
    "prepare_inputs.generates_every_step.why":
        "the buffer is refilled at each call, so k slices never share one "
        "generate()",
    "prepare_inputs.generates_every_step.hint":
        "generate only when self._step % k == 0",
    "prepare_inputs.no_eval_branch.title": "no eval branch",
    "prepare_inputs.no_eval_branch.why":
        "evaluation then samples and serves one slice: held-out answers must "
        "be greedy and complete",
    "prepare_inputs.no_eval_branch.hint":
        "first: if not self.model.training: return "
        "self._generate_and_score(generation_batch, greedy=True)",
    "prepare_inputs.step_never_counted.title": "step never counted",
    "prepare_inputs.step_never_counted.why":
        "self._step stays 0, so every step generates anew and serves slice 0 "
        "— k brings no saving at all",
    "prepare_inputs.step_never_counted.hint":
        "add self._step += 1 before returning the slice",
    "prepare_inputs.none_values_dropped.title": "None values dropped",
    "prepare_inputs.none_values_dropped.why":
        "compute_loss reads inputs['old_per_token_logps'] even when it is "
        "None: a missing key is a KeyError two cells later",
    "prepare_inputs.none_values_dropped.hint":
        "keep every key: None if value is None else value[rows]",
    "prepare_inputs.keys_shuffled_apart.title": "keys shuffled apart",
    "prepare_inputs.keys_shuffled_apart.why":
        "each key got its own order, so a slice's completion_ids, masks and "
        "advantages belong to different completions: it trains, on nonsense",
    "prepare_inputs.keys_shuffled_apart.hint":
        "one order = torch.randperm(n) for the batch, then value[rows] for "
        "every key",
    "prepare_inputs.refilled_on_wrong_step.title":
        "refilled on the wrong step",
    "prepare_inputs.refilled_on_wrong_step.why":
        "counting the step before using it generates at steps 0, 2, 5 "
        "instead of 0, 3: one generation comes from the old prompts and "
        "slices go unserved",
    "prepare_inputs.refilled_on_wrong_step.hint":
        "test self._step % k and serve self._buffer[self._step % k] first, "
        "then self._step += 1",
    "prepare_inputs.not_shuffled.title": "not shuffled",
    "prepare_inputs.not_shuffled.why":
        "each slice then holds whole groups in generation order: with GA < "
        "k, an optimizer step sees only a few prompts (TRL shuffles, "
        "shuffle_sequence_dict)",
    "prepare_inputs.not_shuffled.hint":
        "order = torch.randperm(n), then value[rows] for rows in "
        "order.chunk(k)",
    "prepare_inputs.problem.step":
        "after 6 steps self._step is {steps}, not 6: count every call with "
        "self._step += 1",
    "prepare_inputs.problem.when":
        "with steps_per_generation=3, generation should run at steps 0 and "
        "3, when a new big batch comes; yours ran at steps {when}",
    "prepare_inputs.problem.kind":
        "_prepare_inputs returned a {kind}: serve a dict, one slice of the "
        "generated batch",
    "prepare_inputs.problem.aligned":
        "step {step}'s slice: row i of one key is not row i of another — "
        "shuffle every key with the same order (one torch.randperm, then "
        "value[rows] for each key)",
    "prepare_inputs.problem.covered":
        "the 3 slices of each generation should cover its 24 completions "
        "once each",
    "prepare_inputs.problem.mixed":
        "each slice holds whole groups in the order they were generated: "
        "shuffle the rows before cutting (order = torch.randperm(n)), as "
        "TRL's shuffle_sequence_dict does",
    "prepare_inputs.problem.evaluation":
        "in evaluation (model.training is False) generate greedily and serve "
        "it all: return self._generate_and_score(batch, greedy=True)",
    "prepare_inputs.problem.missing key":
        "step {step}'s slice has no key {key!r}: keep every key of the "
        "generated batch, None values too",
    "prepare_inputs.problem.none kept":
        "step {step}'s old_per_token_logps should stay None (None if value "
        "is None else value[rows])",
    "prepare_inputs.problem.slice size":
        "step {step} got {count} completions; each step gets a slice of "
        "per_device_train_batch_size=8",
    "prepare_inputs.judge.passed":
        "one generation every 3 steps, 3 shuffled slices that cover it, "
        "every key aligned",

    # group_advantages
    "group_advantages.hint.1":
        "rewards.view(-1, num_generations) puts each prompt's G completions "
        "on one row, (B, G): normalise within each row, not over the whole "
        "batch, and not along view(G, -1)'s rows.",
    "group_advantages.hint.2":
        "Subtract each row's mean, then divide by its std + 1e-4 "
        "(keepdim=True to broadcast): the std puts the groups of easy and "
        "hard prompts on one scale.",
    "group_advantages.hint.3":
        "torch's default std is unbiased (divides by G − 1), as TRL's: no "
        "unbiased=False.",
    "group_advantages.hint.4":
        "Return the same layout as the input: .view(-1).",
    "group_advantages.whole_batch.title": "whole-batch normalisation",
    "group_advantages.whole_batch.why":
        "the baseline is each prompt's own group: an easy prompt's "
        "completions should not all look good",
    "group_advantages.whole_batch.hint": "view(-1, G) and normalise each row",
    "group_advantages.population_std.title": "population std",
    "group_advantages.population_std.why":
        "torch's default std is unbiased (divides by G − 1), as TRL's",
    "group_advantages.population_std.hint":
        "drop unbiased=False / correction=0",
    "group_advantages.view_G_minus_1.title": "view(G, -1)",
    "group_advantages.view_G_minus_1.why":
        "that makes G rows of consecutive rewards; a prompt's G completions "
        "sit next to each other, so a group is a row of view(-1, G)",
    "group_advantages.view_G_minus_1.hint":
        "rewards.view(-1, num_generations)",
    "group_advantages.no_std.title": "no std normalisation",
    "group_advantages.no_std.why":
        "the mean is subtracted but the spread is left: a group whose "
        "rewards differ a lot then pushes harder than one whose rewards "
        "differ a little",
    "group_advantages.no_std.hint":
        "divide by grouped.std(dim=1, keepdim=True) + 1e-4",

    # grpo_loss
    "grpo_loss.hint.1":
        "ratio = exp(per_token_logps − old_per_token_logps), new minus old: "
        "above 1 where the policy now likes a token more; 1 on-policy.",
    "grpo_loss.hint.2":
        "Per token: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A), with A "
        "unsqueezed to (B, 1). The min is what makes the clip a pessimistic "
        "bound; the minus turns the objective GRPO maximises into a loss the "
        "Trainer minimises.",
    "grpo_loss.hint.3":
        "Clip with the epsilon you are given: clamp(ratio, 1 - epsilon, 1 + "
        "epsilon), not 0.8 and 1.2.",
    "grpo_loss.hint.4":
        "Mean over each completion's own tokens (mask!), then mean over "
        "completions.",
    "grpo_loss.hint.5":
        "The KL is a penalty: + beta * per_token_kl(per_token_logps, "
        "ref_per_token_logps), in that order, and only when beta > 0 — with "
        "beta = 0 there is no reference (None).",
    "grpo_loss.hint.6":
        "Keep the loss differentiable in per_token_logps: no .detach(), no "
        "torch.no_grad() — that is the policy being trained.",
    "grpo_loss.no_min.title": "no min",
    "grpo_loss.no_min.why":
        "the clipped term alone gives no gradient where the ratio is "
        "clipped, even when moving back would help",
    "grpo_loss.no_min.hint":
        "−min(ratio·A, clipped·A): the min keeps the pessimistic one",
    "grpo_loss.max_not_min.title": "max instead of min",
    "grpo_loss.max_not_min.why":
        "the loss is minus the objective: −min(...) is the pessimistic "
        "bound, −max(...) the optimistic one",
    "grpo_loss.max_not_min.hint": "torch.min(ratio * A, clipped * A)",
    "grpo_loss.token_level_mean.title": "token-level mean",
    "grpo_loss.token_level_mean.why":
        "one mean over all tokens weighs long completions more; GRPO's eq. 3 "
        "averages each completion's tokens first",
    "grpo_loss.token_level_mean.hint":
        "(per_token * mask).sum(1) / mask.sum(1), then .mean()",
    "grpo_loss.no_mask.title": "no mask",
    "grpo_loss.no_mask.why":
        "tokens after <eos> (padding) count in each completion's mean",
    "grpo_loss.no_mask.hint":
        "multiply by completion_mask and divide by its sum per row",
    "grpo_loss.detached_logps.title": "detached log-probs",
    "grpo_loss.detached_logps.why":
        "the loss has no gradient: per_token_logps (the policy being "
        "trained) was detached or computed under no_grad",
    "grpo_loss.detached_logps.hint":
        "do not .detach() per_token_logps or the loss (old_per_token_logps "
        "is already)",
    "grpo_loss.kl_when_beta_0.title": "KL added when beta = 0",
    "grpo_loss.kl_when_beta_0.why":
        "with beta = 0 there is no reference: ref_per_token_logps is None, "
        "and None − tensor is a TypeError in the trainer",
    "grpo_loss.kl_when_beta_0.hint": "add the KL only inside `if beta > 0:`",
    "grpo_loss.clip_hard_coded.title": "clip hard-coded to 0.8/1.2",
    "grpo_loss.clip_hard_coded.why":
        "the clip ignores epsilon: right for ε = 0.2 only",
    "grpo_loss.clip_hard_coded.hint":
        "torch.clamp(ratio, 1 - epsilon, 1 + epsilon)",
    "grpo_loss.kl_sign_reversed.title": "KL sign reversed",
    "grpo_loss.kl_sign_reversed.why":
        "−β·KL rewards the policy for moving away from the reference: the "
        "penalty pulls it back",
    "grpo_loss.kl_sign_reversed.hint": "per_token + beta * per_token_kl(...)",
    "grpo_loss.kl_arguments_swapped.title": "KL arguments swapped",
    "grpo_loss.kl_arguments_swapped.why":
        "GRPO's k3 estimate of KL(π‖ref) is exp(ref − π) − (ref − π) − 1 on "
        "tokens sampled from π; swapped, it is another penalty, exponential "
        "where π outgrows ref",
    "grpo_loss.kl_arguments_swapped.hint":
        "per_token_kl(per_token_logps, ref_per_token_logps)",
    "grpo_loss.ratio_inverted.title": "ratio as exp(old − new)",
    "grpo_loss.ratio_inverted.why":
        "the ratio is π/π_old: inverted, the clip and the gradient push the "
        "wrong way off-policy",
    "grpo_loss.ratio_inverted.hint":
        "torch.exp(per_token_logps - old_per_token_logps)",
    "grpo_loss.no_minus.title": "no minus sign",
    "grpo_loss.no_minus.why":
        "min(ratio·A, clipped·A) is the objective to maximise; the Trainer "
        "minimises, so the policy would learn to do worse",
    "grpo_loss.no_minus.hint": "-torch.min(ratio * A, clipped * A)",
    "grpo_loss.judge.shape":
        "the loss should be one number, got shape {shape}",
    "grpo_loss.judge.no gradient":
        "the loss has no gradient: keep per_token_logps in the computation "
        "(do not detach it)",
    "grpo_loss.judge.passed":
        "loss and gradient {verdict}, for several epsilon, with and without "
        "KL",

    # buffer_checkpoint (notebook 08)
    "buffer_checkpoint.stub":
        "replace each `raise NotImplementedError` with your code (and give "
        "each method the signature it needs)",
    "buffer_checkpoint.hint.1":
        "Take what you do not use: def _save_checkpoint(self, model, trial, "
        "**kwargs), and pass **kwargs on to super(). The same for "
        "_load_from_checkpoint(self, resume_from_checkpoint, model=None, "
        "**kwargs).",
    "buffer_checkpoint.hint.2":
        "Saving: call super()._save_checkpoint(...) first (it makes the "
        "checkpoint-N folder), then torch.save({'step': self._step, "
        "'buffer': self._buffer, 'generation': self._generation}, path) in "
        "that folder, in a file named for self.accelerator.process_index: "
        "every process holds its own slices.",
    "buffer_checkpoint.hint.3":
        "Loading: call super()._load_from_checkpoint(...) (it loads the "
        "weights), then torch.load(path, weights_only=True) and set "
        "self._step, self._buffer and self._generation back, all three.",
    "buffer_checkpoint.no_kwargs.title": "no **kwargs",
    "buffer_checkpoint.no_kwargs.why":
        "a Trainer that passes one argument more (as 4.46 passed metrics, "
        "which 4.47 dropped) stops your run with a TypeError at its first "
        "save",
    "buffer_checkpoint.no_kwargs.hint":
        "def _save_checkpoint(self, model, trial, **kwargs), and "
        "super()._save_checkpoint(model, trial, **kwargs)",
    "buffer_checkpoint.saved_before_super.title": "saved before super()",
    "buffer_checkpoint.saved_before_super.why":
        "the checkpoint-N folder does not exist until the Trainer's "
        "_save_checkpoint makes it, so torch.save has nowhere to write",
    "buffer_checkpoint.saved_before_super.hint":
        "call super()._save_checkpoint(model, trial, **kwargs) first, then "
        "save the buffer into the folder it made",
    "buffer_checkpoint.buffer_not_saved.title": "buffer not saved",
    "buffer_checkpoint.buffer_not_saved.why":
        "the checkpoint holds only the Trainer's files: a resume mid-buffer "
        "generates anew, with other completions, and the run ends elsewhere",
    "buffer_checkpoint.buffer_not_saved.hint":
        "after super(): torch.save({'step': ..., 'buffer': ..., "
        "'generation': ...}, os.path.join(folder, name))",
    "buffer_checkpoint.super_not_called.title": "super() not called",
    "buffer_checkpoint.super_not_called.why":
        "without the Trainer's _load_from_checkpoint the weights are never "
        "loaded: the resumed run trains the starting policy again",
    "buffer_checkpoint.super_not_called.hint":
        "first super()._load_from_checkpoint(resume_from_checkpoint, model, "
        "**kwargs), then your own file",
    "buffer_checkpoint.not_restored.title": "saved but not restored",
    "buffer_checkpoint.not_restored.why":
        "the file is in the checkpoint but nothing reads it: the resumed run "
        "starts with no buffer and generates anew",
    "buffer_checkpoint.not_restored.hint":
        "override _load_from_checkpoint too: torch.load the file and set "
        "self._buffer (and the rest) back",
    "buffer_checkpoint.step_not_restored.title": "step counter not restored",
    "buffer_checkpoint.step_not_restored.why":
        "the buffer is back but self._step is 0, so the next step "
        "generates anew instead of serving the buffer's next slice",
    "buffer_checkpoint.step_not_restored.hint":
        "self._step = state['step'], beside self._buffer",
    "buffer_checkpoint.same_file_everywhere.title":
        "every process writes the same file",
    "buffer_checkpoint.same_file_everywhere.why":
        "each process holds its own slices, and with one file name the last "
        "to save wins: on 2 processes one buffer is lost",
    "buffer_checkpoint.same_file_everywhere.hint":
        "name the file for the process: "
        "f'buffer_{self.accelerator.process_index}.pt'",
    "buffer_checkpoint.problem.kwargs":
        "saving raised a TypeError when the Trainer passed one keyword more "
        "({name}=None): take **kwargs and pass them on to super()",
    "buffer_checkpoint.problem.saving":
        "saving a checkpoint raised {error}: call super() first, then save "
        "into the checkpoint-N folder it made",
    "buffer_checkpoint.problem.not saved":
        "your _save_checkpoint added no file to the checkpoint: save the "
        "buffer and the step counter there",
    "buffer_checkpoint.problem.resuming":
        "resuming from the checkpoint raised {error}",
    "buffer_checkpoint.problem.weights":
        "after loading, the weights are not those saved: call "
        "super()._load_from_checkpoint(...)",
    "buffer_checkpoint.problem.buffer":
        "after loading, self._buffer is not the one saved: read your file "
        "back in _load_from_checkpoint",
    "buffer_checkpoint.problem.step":
        "after loading, self._step is {step}, it was {saved} when saved: set "
        "it back too",
    "buffer_checkpoint.problem.not exact":
        "the resumed run does not end where the uninterrupted one does "
        "(losses, generate() calls or weights differ): restore self._step, "
        "self._buffer and self._generation",
    "buffer_checkpoint.problem.overwritten":
        "saving as process 0 wrote over the file process 1 had saved: name "
        "the file for the process (self.accelerator.process_index)",
    "buffer_checkpoint.problem.nothing":
        "as process 1 of 2 your _save_checkpoint saved nothing of its own: "
        "every process holds its own slices, so each saves its file",
    "buffer_checkpoint.judge.passed":
        "resumed mid-buffer, it ends bit-exactly where the uninterrupted "
        "run does; a newer Trainer's extra keyword passes; each process "
        "saves its own file",
}, "ja": {}}  # filled in by the Japanese edition; English where missing
