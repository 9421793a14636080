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
    "time limit in":
        "your {where} did not return within {timeout:g} s (an endless "
        "loop?)",
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
    "solution.header": "# the answer to {id}: paste it into its cell",
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

    # dapo_loss and dr_grpo_loss (notebook 07)
    "loss_types.judge.passed":
        "loss and gradient {verdict}, for uneven lengths, two batch sizes, "
        "several epsilon, with and without KL",
    "dapo_loss.hint.1":
        "The same per-token loss as grpo_loss; only the division changes: "
        "sum the masked token losses over the whole micro-batch, then "
        "divide by num_items_in_batch, the count you are given — not by "
        "this micro-batch's tokens, not per completion.",
    "dapo_loss.hint.2":
        "Mask before you sum: (per_token * completion_mask.float()).sum(); "
        "the padding after <eos> has losses too.",
    "dapo_loss.hint.3":
        "Add beta * per_token_kl(...) only when beta > 0 (the reference is "
        "None otherwise), and keep the loss differentiable: no .detach().",
    "dapo_loss.per_micro_batch.title": "normalised per micro-batch (bnpo)",
    "dapo_loss.per_micro_batch.why":
        "you divided by this micro-batch's active tokens: that is \"bnpo\"; "
        "a micro-batch with few tokens then weighs as much as one with many",
    "dapo_loss.per_micro_batch.hint":
        "divide by num_items_in_batch, the step's count",
    "dapo_loss.per_sequence_mean.title": "per-sequence mean (grpo)",
    "dapo_loss.per_sequence_mean.why":
        "each completion's tokens were averaged first: that is \"grpo\", "
        "where a short completion's tokens weigh more",
    "dapo_loss.per_sequence_mean.hint":
        "one sum over every masked token, then / num_items_in_batch",
    "dapo_loss.tokens_before_masking.title": "tokens counted before masking",
    "dapo_loss.tokens_before_masking.why":
        "the sum includes the padding after <eos>: those losses are not "
        "zero, and they are not the policy's completion",
    "dapo_loss.tokens_before_masking.hint":
        "(per_token * completion_mask.float()).sum()",
    "dapo_loss.kl_when_beta_0.title": "KL added when beta = 0",
    "dapo_loss.kl_when_beta_0.why":
        "with beta = 0 there is no reference: ref_per_token_logps is None",
    "dapo_loss.kl_when_beta_0.hint": "add the KL only inside `if beta > 0:`",
    "dapo_loss.detached_loss.title": "detached loss",
    "dapo_loss.detached_loss.why":
        "the loss carries no gradient to per_token_logps: training would "
        "learn nothing",
    "dapo_loss.detached_loss.hint":
        "no .detach(), .item() or torch.no_grad() on the policy's log-probs",
    "dr_grpo_loss.hint.1":
        "The same per-token loss as grpo_loss; sum the masked token losses "
        "over the micro-batch and divide by a constant: B x "
        "max_completion_length.",
    "dr_grpo_loss.hint.2":
        "max_completion_length is the argument (the config's), not the "
        "longest completion and not the mask's width: a constant has no "
        "length bias.",
    "dr_grpo_loss.hint.3":
        "Add beta * per_token_kl(...) only when beta > 0 (the reference is "
        "None otherwise), and keep the loss differentiable: no .detach().",
    "dr_grpo_loss.longest_in_data.title": "max length taken from the data",
    "dr_grpo_loss.longest_in_data.why":
        "you divided by the longest completion in the batch: it changes "
        "with the batch, so the length bias comes back",
    "dr_grpo_loss.longest_in_data.hint":
        "per_token.shape[0] * max_completion_length (the argument)",
    "dr_grpo_loss.mask_width.title": "max length taken from the mask's width",
    "dr_grpo_loss.mask_width.why":
        "completion_mask.shape[1] is the padded batch's width, which "
        "depends on the batch; the config's max_completion_length does not",
    "dr_grpo_loss.mask_width.hint":
        "per_token.shape[0] * max_completion_length (the argument)",
    "dr_grpo_loss.per_micro_batch.title": "normalised per micro-batch (bnpo)",
    "dr_grpo_loss.per_micro_batch.why":
        "you divided by the active tokens: that is \"bnpo\", not a constant",
    "dr_grpo_loss.per_micro_batch.hint":
        "divide by B x max_completion_length",
    "dr_grpo_loss.per_sequence_mean.title": "per-sequence mean (grpo)",
    "dr_grpo_loss.per_sequence_mean.why":
        "each completion's tokens were averaged first: that is \"grpo\", "
        "where a short completion's tokens weigh more",
    "dr_grpo_loss.per_sequence_mean.hint":
        "one sum over every masked token, then / (B x max length)",
    "dr_grpo_loss.kl_when_beta_0.title": "KL added when beta = 0",
    "dr_grpo_loss.kl_when_beta_0.why":
        "with beta = 0 there is no reference: ref_per_token_logps is None",
    "dr_grpo_loss.kl_when_beta_0.hint":
        "add the KL only inside `if beta > 0:`",
    "dr_grpo_loss.detached_loss.title": "detached loss",
    "dr_grpo_loss.detached_loss.why":
        "the loss carries no gradient to per_token_logps: training would "
        "learn nothing",
    "dr_grpo_loss.detached_loss.hint":
        "no .detach(), .item() or torch.no_grad() on the policy's log-probs",
    # get_batch_samples (notebook 07)
    "get_batch_samples.hint.1":
        "Count active tokens: the sum of completion_mask over every prepared "
        "batch of the step, not the number of completions, not the mask's "
        "size.",
    "get_batch_samples.hint.2":
        "Prepare first: batches = [self._prepare_inputs(batch) for batch in "
        "batches]. The parent gives prompt rows; only a prepared batch has "
        "a completion_mask to count.",
    "get_batch_samples.hint.3":
        "Count the step, not the generation: the batches you just prepared "
        "are this step's; the buffer's k slices are a step only when "
        "steps_per_generation == GA.",
    "get_batch_samples.hint.4":
        "Each process counts only its own batches: return "
        "self.accelerator.gather(tokens).sum(), one number for all.",
    "get_batch_samples.not_prepared.title": "batches not prepared",
    "get_batch_samples.not_prepared.why":
        "the parent's batches are prompt rows: nothing is generated yet, "
        "so there are no completion tokens to count",
    "get_batch_samples.not_prepared.hint":
        "pass each batch through self._prepare_inputs first",
    "get_batch_samples.first_micro_batch.title": "one micro-batch counted",
    "get_batch_samples.first_micro_batch.why":
        "you counted the first micro-batch's tokens only: with GA > 1 the "
        "step's loss is divided by too few tokens",
    "get_batch_samples.first_micro_batch.hint":
        "sum the completion_mask of every batch of the step",
    "get_batch_samples.completions_counted.title":
        "completions counted, not tokens",
    "get_batch_samples.completions_counted.why":
        "len() counts completions: \"dapo\" divides by active tokens",
    "get_batch_samples.completions_counted.hint":
        "batch[\"completion_mask\"].sum(), not len(...)",
    "get_batch_samples.tokens_before_masking.title":
        "tokens counted before masking",
    "get_batch_samples.tokens_before_masking.why":
        "numel() counts the padding after <eos> too: the count is too big "
        "and depends on the longest completion",
    "get_batch_samples.tokens_before_masking.hint":
        "sum the mask's ones: completion_mask.sum()",
    "get_batch_samples.generation_count.title":
        "the generation's count (TRL issue 5619)",
    "get_batch_samples.generation_count.why":
        "you counted the whole generation's tokens: that is the step's only "
        "when steps_per_generation == GA",
    "get_batch_samples.generation_count.hint":
        "count the batches this step serves, not self._buffer",
    "get_batch_samples.rescaled_generation_count.title":
        "the generation's count rescaled (TRL 1.16)",
    "get_batch_samples.rescaled_generation_count.why":
        "generation tokens x GA / k is the step's count on average only: "
        "exact when every slice has as many tokens as the others",
    "get_batch_samples.rescaled_generation_count.hint":
        "count the step's own batches instead of rescaling",
    "get_batch_samples.not_gathered.title": "not gathered over processes",
    "get_batch_samples.not_gathered.why":
        "each process would divide by its own tokens: with 2 processes the "
        "step's loss is no longer one token mean",
    "get_batch_samples.not_gathered.hint":
        "self.accelerator.gather(tokens).sum()",
    "get_batch_samples.gather_not_summed.title": "gathered but not summed",
    "get_batch_samples.gather_not_summed.why":
        "gather returns one count per process: num_items_in_batch must be "
        "one number",
    "get_batch_samples.gather_not_summed.hint":
        "add .sum() after the gather",
    "get_batch_samples.problem.prepared":
        "{count} of the step's {GA} batches went through _prepare_inputs: "
        "prepare each one, once",
    "get_batch_samples.problem.pair":
        "get_batch_samples returned {kind}: return (batches, count), the "
        "count a number (the Trainer passes it on as num_items_in_batch)",
    "get_batch_samples.problem.kind":
        "return the prepared batches (dicts with a completion_mask), not the "
        "prompt rows",
    "get_batch_samples.problem.shape":
        "the count has shape {shape}: return one number, the sum over "
        "processes",
    "get_batch_samples.problem.count":
        "with {where} the step has {wanted} active tokens over the two "
        "processes, your count is {got}",
    "get_batch_samples.judge.passed":
        "the step's active tokens, counted exactly, for {splits} splits of "
        "GA against steps_per_generation, over 2 processes",
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
        "Loading: first your file: raise a ValueError naming it if it is "
        "missing, torch.load(path, weights_only=True), and raise one if its "
        "buffer has not self.args.steps_per_generation slices. Then "
        "super()._load_from_checkpoint(...) (it loads the weights), then set "
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
    "buffer_checkpoint.read_after_the_weights.title":
        "file read after the weights",
    "buffer_checkpoint.read_after_the_weights.why":
        "a checkpoint without your file fails only once the Trainer has "
        "loaded its weights (a raw FileNotFoundError), and one whose buffer "
        "was cut for another k resumes and serves the wrong slices",
    "buffer_checkpoint.read_after_the_weights.hint":
        "read and check your file (there; steps_per_generation slices) "
        "before super()._load_from_checkpoint(...), raising a ValueError "
        "that names it",
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
    "buffer_checkpoint.problem.saving after super":
        "saving the checkpoint raised {error} after super() had saved the "
        "Trainer's files: save into the folder super() made, "
        "os.path.join(self._get_output_dir(trial), "
        "f'checkpoint-{{self.state.global_step}}')",
    "buffer_checkpoint.problem.before super":
        "your _save_checkpoint wrote {files} into the checkpoint folder "
        "before super()._save_checkpoint began: call super() first, then "
        "save into the checkpoint-N folder it made",
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
    "buffer_checkpoint.case.missing": "without your buffer file",
    "buffer_checkpoint.case.other k":
        "whose buffer has a slice more than this run's steps_per_generation",
    "buffer_checkpoint.problem.resumed":
        "a checkpoint {case} was resumed without a word: in "
        "_load_from_checkpoint check your file first (there, and its buffer "
        "has steps_per_generation slices) and raise a ValueError naming it",
    "buffer_checkpoint.problem.after the weights":
        "a checkpoint {case} was refused ({error}) only after super() had "
        "loaded its weights: read and check your file first, then call "
        "super()._load_from_checkpoint(...)",
    "buffer_checkpoint.judge.passed":
        "resumed mid-buffer, it ends bit-exactly where the uninterrupted "
        "run does; a newer Trainer's extra keyword passes; each process "
        "saves its own file; a checkpoint without it, or cut for another k, "
        "is refused before the weights load",
}, "ja": {}}  # filled in by the Japanese edition; English where missing

# The Japanese half, in the English half's order. Terms as README.ja.md's
# glossary (from the Japanese transformers docs): 損失, 勾配累積,
# マイクロバッチ, コールバック, 補完, 方策, 参照モデル, 対数確率; code,
# API names and the {fields} stay as in English.
# To add an entry (notebooks 07 and 08, or any new checker line): write the
# English under its key above, then the same key here, with the same
# {fields} and the same `code` names; tests/test_i18n.py fails until every
# English key has its Japanese one (kit.i18n.missing(MESSAGES) lists them).
MESSAGES["ja"].update({
    "loss_types.judge.passed":
        "損失と勾配が{verdict}: 長さの不揃いな補完、2 つのバッチサイズ、"
        "いくつかの epsilon、KL のあり・なしで",
    "verdict.passed": "✅ 合格",
    "verdict.failed": "❌ 不合格",
    "verdict.not attempted": "⏸  未着手",
    "verdict.line": "{verdict} · {id} {stars}: {message}",
    "note": "ℹ️  注: {note}",
    "help": "   {line}",
    "matches": "参照実装と一致します",
    "stub": "`raise NotImplementedError` をあなたのコードに置き換えてください",
    "still the stub": "まだスタブのままです: {stub}",
    "time limit":
        "あなたのコードが {timeout:g} 秒を超えて実行されました (無限ループ?)",
    "time limit in":
        "{where} が {timeout:g} 秒以内に戻りませんでした (無限ループ?)",
    "raised": "あなたのコードが {error} を送出しました",
    "mistake": "{title} — {why}",
    "checker failed":
        "チェッカー自体が失敗しました ({error}): あなたの解答ではなく kit "
        "のバグです。報告してください",
    "uses.not done":
        "演習 {number} はまだ終わっていません: この演習のチェックには kit の "
        "`{name}` を使います",
    "uses.not passing":
        "演習 {number} はチェックに合格していません: この演習のチェックには "
        "kit の `{name}` を使います",
    "refused.unknown id": "演習 {id!r} はありません: 演習は {known} です",
    "refused.timeout":
        "check({id!r}, ..., timeout={timeout!r}): timeout "
        "はあなたのコードを実行してよい秒数で、0 より大きい数です (例: "
        "timeout=60)",
    "refused.hint level":
        "{id} のヒントは {levels} です: レベル {level!r} ではなく "
        "hint({id!r}, 1) を試してください",
    "refused.unknown id.why": "演習 {id!r} はありません",
    "refused.timeout.why": "timeout={timeout!r}",
    "not checked": "チェックしていません: {why}",
    "refused.strict": "check() が拒否しました: {why}",
    "compare.in place":
        "あなたの関数が入力 `{name}` をその場で書き換えました: "
        "新しいテンソルで計算してください (x.mul_(m) や x[...] = ... "
        "ではなく x = x * m)。呼び出し側はまだ入力を使います",
    "compare.value": "{name}: あなたの値 {actual!r}, 期待値 {wanted!r}",
    "compare.no gradient": "{name}: あなたの結果は勾配を持っていません",
    "compare.not a tensor":
        "{name} は torch.Tensor であるべきですが、{kind} でした",
    "compare.not one number":
        "{name} は 1 つの数 (0 次元テンソル) であるべきですが、形状は "
        "{shape} でした",
    "compare.shape":
        "{name} の形状は {shape} ですが、期待されるのは {expected} です",
    "compare.dtype":
        "{name} の dtype は {dtype} ですが、期待されるのは {expected} です",
    "compare.detached":
        "{name} は勾配を持っていません: 計算グラフから切り離されています "
        "(.detach(), .item(), torch.tensor(...) や torch.no_grad())。"
        "これでは学習できません",
    "facts.raised": "あなたの {what} が {error} を送出しました",
    "compare.close": "ほぼ一致 (最大の差 {difference:.1e})",
    "compare.differs":
        "{name} が参照実装と異なります: 最大の差 {difference:.3g} "
        "(あなたの値 {actual}, 期待値 {expected})",
    "kind.start": "check({id!r}, ...) が受け取るのは ",
    "kind.class": "{base} のサブクラス (クラス) です",
    "kind.class method": "{method} を持つ {base} のサブクラス (クラス) です",
    "kind.instance":
        "が、インスタンスが渡されました: {name}(...) ではなくクラスそのもの "
        "{name} を渡してください",
    "kind.got": "が、{kind} が渡されました",
    "kind.not a subclass":
        "が、渡されたクラス {name} は {base} のサブクラスではありません",
    "kind.function":
        "{name}{signature} のような関数ですが、{kind} が渡されました",
    "kind.dict": "dict ですが、{kind} が渡されました",
    "kind.the class": "クラス {name}",
    "kind.the function": "関数 {name}",
    "hint.line": "ヒント {level}/{count}: {text}",
    "hint.named": "ヒント: {text}",
    "symptom.detached":
        "結果が勾配を持っていません: 入力から torch の演算で作り、途中で "
        ".detach(), .item(), torch.tensor(...) や torch.no_grad() "
        "を使わないでください (Trainer はこれに .backward() を呼びます)",
    "symptom.shape":
        "docstring の `Shape:` 行にある形状を返してください: 途中で x.shape "
        "と x.dtype を表示すると、どこで変わるかがわかります",
    "symptom.in_place":
        "入力は受け取ったままにしてください: 書き換える (x[...] = ..., "
        "x.mul_(...)) のではなく、新しいテンソルを作ります (x = "
        "x.masked_fill(m, 0), x = x * m)。呼び出し側がまた使います",
    "symptom.scaled":
        "異なる箇所ではどこでも参照実装の {factor:.4g} 倍です: "
        "それ以外は正しいので、定数倍を探してください (割る数、"
        "平均のはずの合計、余分な係数)",
    "symptom.timeout":
        "条件が変わらないループか、入力よりはるかに多くの要素を回すループです"
        ": 小さな入力でループ内を表示して、どちらか確かめてください",
    "symptom.crash":
        "エラーの最後の行を読み、小さな入力で手元でコードを実行して、"
        "エラーの出た行の直前で形状を表示してください",
    "solution.header": "# {id} の解答: 演習のセルに貼り付けてください",
    "group_advantages.hint.1":
        "rewards.view(-1, num_generations) で各プロンプトの G 個の補完が 1 "
        "行に並びます (B, G): バッチ全体でも view(G, -1) の行でもなく、"
        "各行の中で正規化してください。",
    "group_advantages.hint.2":
        "各行の平均を引き、その標準偏差 + 1e-4 で割ります "
        "(ブロードキャストのため keepdim=True): 標準偏差が、"
        "易しいプロンプトと難しいプロンプトのグループを同じ尺度にそろえます。",
    "group_advantages.hint.3":
        "torch の既定の std は不偏 (G − 1 で割る) で、TRL と同じです: "
        "unbiased=False は付けません。",
    "group_advantages.hint.4": "入力と同じ並びで返します: .view(-1)。",
    "group_advantages.whole_batch.title": "バッチ全体での正規化",
    "group_advantages.whole_batch.why":
        "ベースラインは各プロンプト自身のグループです: "
        "易しいプロンプトの補完がすべて良く見えてはいけません",
    "group_advantages.whole_batch.hint":
        "view(-1, G) として各行を正規化してください",
    "group_advantages.population_std.title": "母標準偏差",
    "group_advantages.population_std.why":
        "torch の既定の std は不偏 (G − 1 で割る) で、TRL と同じです",
    "group_advantages.population_std.hint":
        "unbiased=False / correction=0 を外してください",
    "group_advantages.view_G_minus_1.title": "view(G, -1)",
    "group_advantages.view_G_minus_1.why":
        "これでは連続する報酬の G 行になります。プロンプトの G "
        "個の補完は隣り合っているので、グループは view(-1, G) の 1 行です",
    "group_advantages.view_G_minus_1.hint":
        "rewards.view(-1, num_generations)",
    "group_advantages.no_std.title": "標準偏差で正規化していない",
    "group_advantages.no_std.why":
        "平均は引いても散らばりはそのままです: 報酬の差が大きいグループが、"
        "差の小さいグループより強く押すことになります",
    "group_advantages.no_std.hint":
        "grouped.std(dim=1, keepdim=True) + 1e-4 で割ってください",
    "grpo_loss.hint.1":
        "ratio = exp(per_token_logps − old_per_token_logps)、新 − 旧: "
        "方策がそのトークンを前より好むところで 1 より大きく、"
        "オンポリシーでは 1 です。",
    "grpo_loss.hint.2":
        "トークンごとに: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A)。A は (B, "
        "1) に unsqueeze します。min がクリップを悲観的な下限にし、"
        "マイナスが GRPO の最大化する目的関数を Trainer "
        "が最小化する損失に変えます。",
    "grpo_loss.hint.3":
        "与えられた epsilon でクリップします: 0.8 と 1.2 ではなく "
        "clamp(ratio, 1 - epsilon, 1 + epsilon)。",
    "grpo_loss.hint.4":
        "各補完の自分のトークンで平均し (マスク!)、それから補完で平均します。",
    "grpo_loss.hint.5":
        "KL はペナルティです: + beta * per_token_kl(per_token_logps, "
        "ref_per_token_logps)、この順で、beta > 0 のときだけ。beta = 0 "
        "では参照モデルがありません (None)。",
    "grpo_loss.hint.6":
        "損失は per_token_logps について微分可能なままにします: .detach() も "
        "torch.no_grad() も使いません。それが学習中の方策です。",
    "grpo_loss.no_min.title": "min がない",
    "grpo_loss.no_min.why":
        "クリップした項だけでは、比率がクリップされたところで勾配が出ません。"
        "戻ったほうがよいときでもです",
    "grpo_loss.no_min.hint":
        "−min(ratio·A, clipped·A): min が悲観的なほうを残します",
    "grpo_loss.max_not_min.title": "min ではなく max",
    "grpo_loss.max_not_min.why":
        "損失は目的関数の符号を反転したものです: −min(...) が悲観的な下限、"
        "−max(...) は楽観的なものです",
    "grpo_loss.max_not_min.hint": "torch.min(ratio * A, clipped * A)",
    "grpo_loss.token_level_mean.title": "トークン単位の平均",
    "grpo_loss.token_level_mean.why":
        "全トークンで 1 つの平均を取ると長い補完が重くなります。GRPO の式 3 "
        "はまず各補完のトークンで平均します",
    "grpo_loss.token_level_mean.hint":
        "(per_token * mask).sum(1) / mask.sum(1)、それから .mean()",
    "grpo_loss.no_mask.title": "マスクがない",
    "grpo_loss.no_mask.why":
        "<eos> 以降のトークン (パディング) が各補完の平均に入ります",
    "grpo_loss.no_mask.hint":
        "completion_mask を掛け、行ごとにその和で割ってください",
    "grpo_loss.detached_logps.title": "切り離された対数確率",
    "grpo_loss.detached_logps.why":
        "損失が勾配を持っていません: per_token_logps (学習中の方策) "
        "が切り離されたか、no_grad の下で計算されました",
    "grpo_loss.detached_logps.hint":
        "per_token_logps も損失も .detach() しないでください "
        "(old_per_token_logps はすでに切り離されています)",
    "grpo_loss.kl_when_beta_0.title": "beta = 0 で KL を加えた",
    "grpo_loss.kl_when_beta_0.why":
        "beta = 0 では参照モデルがありません: ref_per_token_logps は None "
        "で、None − tensor はトレーナーで TypeError になります",
    "grpo_loss.kl_when_beta_0.hint":
        "KL は `if beta > 0:` の中でだけ加えてください",
    "grpo_loss.clip_hard_coded.title": "クリップを 0.8/1.2 に固定",
    "grpo_loss.clip_hard_coded.why":
        "クリップが epsilon を無視しています: 正しいのは ε = 0.2 "
        "のときだけです",
    "grpo_loss.clip_hard_coded.hint":
        "torch.clamp(ratio, 1 - epsilon, 1 + epsilon)",
    "grpo_loss.kl_sign_reversed.title": "KL の符号が逆",
    "grpo_loss.kl_sign_reversed.why":
        "−β·KL は参照モデルから離れるほど方策に報酬を与えます: "
        "ペナルティは引き戻すものです",
    "grpo_loss.kl_sign_reversed.hint": "per_token + beta * per_token_kl(...)",
    "grpo_loss.kl_arguments_swapped.title": "KL の引数が逆",
    "grpo_loss.kl_arguments_swapped.why":
        "GRPO の KL(π‖ref) の k3 推定は、π からサンプリングしたトークンでの "
        "exp(ref − π) − (ref − π) − 1 です。逆にすると別のペナルティになり、"
        "π が ref を上回るところで指数的に増えます",
    "grpo_loss.kl_arguments_swapped.hint":
        "per_token_kl(per_token_logps, ref_per_token_logps)",
    "grpo_loss.ratio_inverted.title": "比率を exp(old − new) にした",
    "grpo_loss.ratio_inverted.why":
        "比率は π/π_old です: 逆にすると、オフポリシーでクリップと勾配が逆向"
        "きに押します",
    "grpo_loss.ratio_inverted.hint":
        "torch.exp(per_token_logps - old_per_token_logps)",
    "grpo_loss.no_minus.title": "マイナス符号がない",
    "grpo_loss.no_minus.why":
        "min(ratio·A, clipped·A) は最大化する目的関数です。Trainer "
        "は最小化するので、方策は悪くなるように学習してしまいます",
    "grpo_loss.no_minus.hint": "-torch.min(ratio * A, clipped * A)",
    "grpo_loss.judge.shape":
        "損失は 1 つの数であるべきですが、形状は {shape} でした",
    "grpo_loss.judge.no gradient":
        "損失が勾配を持っていません: per_token_logps を計算に残してください "
        "(切り離さないでください)",
    "grpo_loss.judge.passed":
        "損失と勾配が、いくつかの epsilon で、KL ありとなしで {verdict}",
    "buffer_checkpoint.buffer_not_saved.hint":
        "super() のあと: torch.save("
        "{'step': ..., 'buffer': ..., 'generation': ...}, "
        "os.path.join(folder, name))",
    "buffer_checkpoint.buffer_not_saved.title": "バッファが保存されていない",
    "buffer_checkpoint.buffer_not_saved.why":
        "チェックポイントには Trainer のファイルしかありません: "
        "バッファの途中から再開すると新たに生成し、別の補完になって、"
        "実行は別のところで終わります",
    "buffer_checkpoint.hint.1":
        "使わないものも受け取ります: def _save_checkpoint(self, model, "
        "trial, **kwargs) とし、**kwargs を super() に渡します。"
        "_load_from_checkpoint(self, resume_from_checkpoint, model=None, "
        "**kwargs) も同じです。",
    "buffer_checkpoint.hint.2":
        "保存: まず super()._save_checkpoint(...) を呼び (checkpoint-N "
        "フォルダを作ります)、それからそのフォルダに torch.save("
        "{"
        "'step': self._step, 'buffer': self._buffer, 'generation': "
        "self._generation}, path) します。ファイル名は "
        "self.accelerator.process_index にちなんで付けます: "
        "各プロセスが自分のスライスを持っています。",
    "buffer_checkpoint.hint.3":
        "読み込み: まず自分のファイルです。ファイルがなければ、その名前を挙げて "
        "ValueError を送出し、torch.load(path, weights_only=True) "
        "で読み、バッファのスライスの数が self.args.steps_per_generation "
        "でなければ、やはり送出します。それから "
        "super()._load_from_checkpoint(...) を呼び (重みを読み込みます)、"
        "self._step、self._buffer、self._generation の 3 "
        "つすべてを元に戻します。",
    "buffer_checkpoint.judge.passed":
        "バッファの途中から再開して、中断しなかった実行とビット単位で同じとこ"
        "ろで終わります。新しい Trainer の余分なキーワード引数も通り、"
        "各プロセスが自分のファイルを保存します。ファイルのないチェックポイン"
        "トや、別の k で切ったチェックポイントは、重みを読み込む前に拒否され"
        "ます",
    "buffer_checkpoint.case.missing": "バッファのファイルがない",
    "buffer_checkpoint.case.other k":
        "バッファのスライスがこの実行の steps_per_generation より 1 つ多い",
    "buffer_checkpoint.problem.resumed":
        "{case}チェックポイントが、何も言わずに再開されました: "
        "_load_from_checkpoint でまず自分のファイルを確かめ (あること、"
        "バッファのスライスが steps_per_generation 個あること)、"
        "その名前を挙げて ValueError を送出してください",
    "buffer_checkpoint.problem.after the weights":
        "{case}チェックポイントは、super() が重みを読み込んだ後になって"
        "拒否されました ({error}): まず自分のファイルを読んで確かめ、"
        "それから super()._load_from_checkpoint(...) を呼んでください",
    "buffer_checkpoint.read_after_the_weights.title":
        "重みの後にファイルを読んでいる",
    "buffer_checkpoint.read_after_the_weights.why":
        "ファイルのないチェックポイントは、Trainer が重みを読み込んだ後に"
        "なって失敗し (そのままの FileNotFoundError)、別の k で切った"
        "バッファのチェックポイントは再開されて、違うスライスを渡します",
    "buffer_checkpoint.read_after_the_weights.hint":
        "super()._load_from_checkpoint(...) の前に自分のファイルを読んで"
        "確かめ (あること、スライスが steps_per_generation 個あること)、"
        "その名前を挙げて ValueError を送出します",
    "buffer_checkpoint.no_kwargs.hint":
        "def _save_checkpoint(self, model, trial, **kwargs) とし、"
        "super()._save_checkpoint(model, trial, **kwargs)",
    "buffer_checkpoint.no_kwargs.title": "**kwargs がない",
    "buffer_checkpoint.no_kwargs.why":
        "引数を 1 つ多く渡す Trainer (4.46 は metrics を渡し、4.47 "
        "でなくなりました) では、最初の保存で TypeError "
        "になり実行が止まります",
    "buffer_checkpoint.not_restored.hint":
        "_load_from_checkpoint もオーバーライドしてください: ファイルを "
        "torch.load し、self._buffer (と残り) を元に戻します",
    "buffer_checkpoint.not_restored.title": "保存したが復元していない",
    "buffer_checkpoint.not_restored.why":
        "ファイルはチェックポイントにありますが、誰も読みません: "
        "再開した実行はバッファなしで始まり、新たに生成します",
    "buffer_checkpoint.problem.buffer":
        "読み込み後の self._buffer が保存したものではありません: "
        "_load_from_checkpoint で自分のファイルを読み戻してください",
    "buffer_checkpoint.problem.kwargs":
        "Trainer がキーワード引数を 1 つ多く渡すと ({name}=None) 保存で "
        "TypeError が送出されました: **kwargs を受け取り、super() "
        "に渡してください",
    "buffer_checkpoint.problem.not exact":
        "再開した実行が中断しなかった実行と同じところで終わりません (損失、"
        "generate() の呼び出し、または重みが違います): self._step、"
        "self._buffer、self._generation を元に戻してください",
    "buffer_checkpoint.problem.not saved":
        "あなたの _save_checkpoint "
        "はチェックポイントにファイルを追加しませんでした: "
        "バッファとステップカウンタをそこに保存してください",
    "buffer_checkpoint.problem.nothing":
        "2 つ中のプロセス 1 として、あなたの _save_checkpoint "
        "は自分のものを何も保存しませんでした: "
        "各プロセスが自分のスライスを持つので、"
        "それぞれが自分のファイルを保存します",
    "buffer_checkpoint.problem.overwritten":
        "プロセス 0 としての保存が、プロセス 1 "
        "が保存したファイルを上書きしました: "
        "ファイル名をプロセスにちなんで付けてください (self.accelerator.proce"
        "ss_index)",
    "buffer_checkpoint.problem.resuming":
        "チェックポイントからの再開で {error} が送出されました",
    "buffer_checkpoint.problem.saving":
        "チェックポイントの保存で {error} が送出されました: まず super() "
        "を呼び、それが作った checkpoint-N フォルダに保存してください",
    "buffer_checkpoint.problem.saving after super":
        "super() が Trainer のファイルを保存した後、チェックポイントの保存で "
        "{error} が送出されました: super() が作ったフォルダ "
        "os.path.join(self._get_output_dir(trial), "
        "f'checkpoint-{{self.state.global_step}}') に保存してください",
    "buffer_checkpoint.problem.before super":
        "_save_checkpoint が super()._save_checkpoint より前に {files} を "
        "チェックポイントのフォルダに書き込みました: まず super() を呼び、"
        "それが作った checkpoint-N フォルダに保存してください",
    "buffer_checkpoint.problem.step":
        "読み込み後の self._step は {step} ですが、保存時は {saved} でした: "
        "これも元に戻してください",
    "buffer_checkpoint.problem.weights":
        "読み込み後の重みが保存したものではありません: "
        "super()._load_from_checkpoint(...) を呼んでください",
    "buffer_checkpoint.same_file_everywhere.hint":
        "ファイル名をプロセスにちなんで付けます: f'buffer_"
        "{self.accelerator.process_index}.pt'",
    "buffer_checkpoint.same_file_everywhere.title":
        "全プロセスが同じファイルに書く",
    "buffer_checkpoint.same_file_everywhere.why":
        "各プロセスは自分のスライスを持ち、ファイル名が 1 "
        "つだと最後に保存したものが勝ちます: 2 プロセスでは 1 "
        "つのバッファが失われます",
    "buffer_checkpoint.saved_before_super.hint":
        "まず super()._save_checkpoint(model, trial, **kwargs) を呼び、"
        "それが作ったフォルダにバッファを保存してください",
    "buffer_checkpoint.saved_before_super.title": "super() の前に保存した",
    "buffer_checkpoint.saved_before_super.why":
        "checkpoint-N フォルダは Trainer の _save_checkpoint "
        "が作るまで存在しないので、torch.save は書く場所がありません",
    "buffer_checkpoint.step_not_restored.hint":
        "self._buffer の隣で self._step = state['step']",
    "buffer_checkpoint.step_not_restored.title":
        "ステップカウンタが復元されていない",
    "buffer_checkpoint.step_not_restored.why":
        "バッファは戻りましたが self._step が 0 なので、"
        "次のステップはバッファの次のスライスを使わずに新たに生成します",
    "buffer_checkpoint.stub":
        "各 `raise NotImplementedError` をあなたのコードに置き換えてください "
        "(各メソッドには必要なシグネチャを付けてください)",
    "buffer_checkpoint.super_not_called.hint":
        "まず super()._load_from_checkpoint(resume_from_checkpoint, model, "
        "**kwargs)、それから自分のファイル",
    "buffer_checkpoint.super_not_called.title": "super() を呼んでいない",
    "buffer_checkpoint.super_not_called.why":
        "Trainer の _load_from_checkpoint がないと重みは読み込まれません: "
        "再開した実行は最初の方策をもう一度学習します",
    "dapo_loss.detached_loss.hint":
        "方策の対数確率に .detach()、.item()、torch.no_grad() "
        "を使わないでください",
    "dapo_loss.detached_loss.title": "切り離された損失",
    "dapo_loss.detached_loss.why":
        "損失が per_token_logps への勾配を持っていません: "
        "学習しても何も学びません",
    "dapo_loss.hint.1":
        "grpo_loss と同じトークンごとの損失で、割り算だけが変わります: "
        "マスクしたトークンの損失をマイクロバッチ全体で合計し、与えられた数 "
        "num_items_in_batch で割ります。このマイクロバッチのトークン数でも、"
        "補完ごとでもありません。",
    "dapo_loss.hint.2":
        "合計する前にマスクします: (per_token * completion_mask.float()).sum("
        ")。<eos> の後のパディングにも損失があります。",
    "dapo_loss.hint.3":
        "beta * per_token_kl(...) は beta > 0 のときだけ加え "
        "(それ以外では参照モデルは None です)、損失は微分可能なままにします: "
        ".detach() は使いません。",
    "dapo_loss.kl_when_beta_0.hint":
        "KL は `if beta > 0:` の中でだけ加えてください",
    "dapo_loss.kl_when_beta_0.title": "beta = 0 で KL を加えた",
    "dapo_loss.kl_when_beta_0.why":
        "beta = 0 では参照モデルがありません: ref_per_token_logps は None "
        "です",
    "dapo_loss.per_micro_batch.hint":
        "ステップの数である num_items_in_batch で割ってください",
    "dapo_loss.per_micro_batch.title": "マイクロバッチごとに正規化 (bnpo)",
    "dapo_loss.per_micro_batch.why":
        "このマイクロバッチの有効なトークン数で割りました: それは \"bnpo\" "
        "で、トークンの少ないマイクロバッチが多いものと同じ重みになります",
    "dapo_loss.per_sequence_mean.hint":
        "マスクした全トークンで 1 回合計し、それから / num_items_in_batch",
    "dapo_loss.per_sequence_mean.title": "系列ごとの平均 (grpo)",
    "dapo_loss.per_sequence_mean.why":
        "各補完のトークンを先に平均しました: それは \"grpo\" で、"
        "短い補完のトークンが重くなります",
    "dapo_loss.tokens_before_masking.hint":
        "(per_token * completion_mask.float()).sum()",
    "dapo_loss.tokens_before_masking.title": "マスクの前にトークンを数えた",
    "dapo_loss.tokens_before_masking.why":
        "合計に <eos> の後のパディングが入っています: その損失は 0 ではなく、"
        "方策の補完でもありません",
    "dr_grpo_loss.detached_loss.hint":
        "方策の対数確率に .detach()、.item()、torch.no_grad() "
        "を使わないでください",
    "dr_grpo_loss.detached_loss.title": "切り離された損失",
    "dr_grpo_loss.detached_loss.why":
        "損失が per_token_logps への勾配を持っていません: "
        "学習しても何も学びません",
    "dr_grpo_loss.hint.1":
        "grpo_loss と同じトークンごとの損失です。"
        "マスクしたトークンの損失をマイクロバッチで合計し、定数 B x "
        "max_completion_length で割ります。",
    "dr_grpo_loss.hint.2":
        "max_completion_length は引数 (config の値) で、"
        "最長の補完でもマスクの幅でもありません: "
        "定数なら長さのバイアスがありません。",
    "dr_grpo_loss.hint.3":
        "beta * per_token_kl(...) は beta > 0 のときだけ加え "
        "(それ以外では参照モデルは None です)、損失は微分可能なままにします: "
        ".detach() は使いません。",
    "dr_grpo_loss.kl_when_beta_0.hint":
        "KL は `if beta > 0:` の中でだけ加えてください",
    "dr_grpo_loss.kl_when_beta_0.title": "beta = 0 で KL を加えた",
    "dr_grpo_loss.kl_when_beta_0.why":
        "beta = 0 では参照モデルがありません: ref_per_token_logps は None "
        "です",
    "dr_grpo_loss.longest_in_data.hint":
        "per_token.shape[0] * max_completion_length (引数)",
    "dr_grpo_loss.longest_in_data.title": "最大長をデータから取った",
    "dr_grpo_loss.longest_in_data.why":
        "バッチ中で最長の補完で割りました: それはバッチごとに変わるので、"
        "長さのバイアスが戻ってきます",
    "dr_grpo_loss.mask_width.hint":
        "per_token.shape[0] * max_completion_length (引数)",
    "dr_grpo_loss.mask_width.title": "最大長をマスクの幅から取った",
    "dr_grpo_loss.mask_width.why":
        "completion_mask.shape[1] はパディングしたバッチの幅で、"
        "バッチによります。config の max_completion_length はよりません",
    "dr_grpo_loss.per_micro_batch.hint":
        "B x max_completion_length で割ってください",
    "dr_grpo_loss.per_micro_batch.title": "マイクロバッチごとに正規化 (bnpo)",
    "dr_grpo_loss.per_micro_batch.why":
        "有効なトークン数で割りました: それは \"bnpo\" で、定数ではありません",
    "dr_grpo_loss.per_sequence_mean.hint":
        "マスクした全トークンで 1 回合計し、それから / (B x 最大長)",
    "dr_grpo_loss.per_sequence_mean.title": "系列ごとの平均 (grpo)",
    "dr_grpo_loss.per_sequence_mean.why":
        "各補完のトークンを先に平均しました: それは \"grpo\" で、"
        "短い補完のトークンが重くなります",
    "get_batch_samples.hint.1":
        "有効なトークンを数えます: ステップの準備済みのすべてのバッチの completion_mask "
        "の合計で、補完の数でも、マスクの大きさでもありません。",
    "get_batch_samples.hint.2":
        "まず準備します: batches = [self._prepare_inputs(batch) for batch in "
        "batches]。親が返すのはプロンプトの行です。数える completion_mask "
        "があるのは準備済みのバッチだけです。",
    "get_batch_samples.hint.3":
        "生成ではなくステップを数えます: いま準備したバッチがこのステップの"
        "ものです。バッファの k 個のスライスがステップになるのは "
        "steps_per_generation == GA のときだけです。",
    "get_batch_samples.hint.4":
        "各プロセスは自分のバッチだけを数えます: "
        "self.accelerator.gather(tokens).sum() を返し、全体で 1 つの数に"
        "します。",
    "get_batch_samples.not_prepared.title": "バッチを準備していない",
    "get_batch_samples.not_prepared.why":
        "親のバッチはプロンプトの行です: まだ何も生成されておらず、"
        "数える補完のトークンがありません",
    "get_batch_samples.not_prepared.hint":
        "まず各バッチを self._prepare_inputs に通してください",
    "get_batch_samples.first_micro_batch.title":
        "1 つのマイクロバッチだけを数えた",
    "get_batch_samples.first_micro_batch.why":
        "最初のマイクロバッチのトークンだけを数えました: GA > 1 では"
        "ステップの損失を少なすぎるトークン数で割ります",
    "get_batch_samples.first_micro_batch.hint":
        "ステップのすべてのバッチの completion_mask を合計してください",
    "get_batch_samples.completions_counted.title":
        "トークンではなく補完を数えた",
    "get_batch_samples.completions_counted.why":
        "len() は補完を数えます: \"dapo\" は有効なトークン数で割ります",
    "get_batch_samples.completions_counted.hint":
        "len(...) ではなく batch[\"completion_mask\"].sum()",
    "get_batch_samples.tokens_before_masking.title":
        "マスクの前にトークンを数えた",
    "get_batch_samples.tokens_before_masking.why":
        "numel() は <eos> の後のパディングも数えます: 数が大きすぎ、"
        "いちばん長い補完に左右されます",
    "get_batch_samples.tokens_before_masking.hint":
        "マスクの 1 を合計します: completion_mask.sum()",
    "get_batch_samples.generation_count.title":
        "生成全体の数 (TRL issue 5619)",
    "get_batch_samples.generation_count.why":
        "生成全体のトークンを数えました: それがステップの数になるのは "
        "steps_per_generation == GA のときだけです",
    "get_batch_samples.generation_count.hint":
        "self._buffer ではなく、このステップが使うバッチを数えてください",
    "get_batch_samples.rescaled_generation_count.title":
        "生成全体の数をスケールし直した (TRL 1.16)",
    "get_batch_samples.rescaled_generation_count.why":
        "生成のトークン数 x GA / k がステップの数になるのは平均としてだけです: "
        "正確なのはどのスライスも同じトークン数のときです",
    "get_batch_samples.rescaled_generation_count.hint":
        "スケールし直さず、ステップ自身のバッチを数えてください",
    "get_batch_samples.not_gathered.title": "プロセス間で集めていない",
    "get_batch_samples.not_gathered.why":
        "各プロセスが自分のトークン数で割ることになります: 2 プロセスでは"
        "ステップの損失が 1 つのトークン平均ではなくなります",
    "get_batch_samples.not_gathered.hint":
        "self.accelerator.gather(tokens).sum()",
    "get_batch_samples.gather_not_summed.title": "集めたが合計していない",
    "get_batch_samples.gather_not_summed.why":
        "gather はプロセスごとに 1 つの数を返します: num_items_in_batch は "
        "1 つの数でなければなりません",
    "get_batch_samples.gather_not_summed.hint":
        "gather の後に .sum() を付けてください",
    "get_batch_samples.problem.prepared":
        "ステップの {GA} 個のバッチのうち {count} 個が _prepare_inputs を"
        "通りました: それぞれを 1 回ずつ準備してください",
    "get_batch_samples.problem.pair":
        "get_batch_samples が {kind} を返しました: (batches, count) を返し、"
        "count は数にしてください (Trainer はそれを num_items_in_batch として"
        "渡します)",
    "get_batch_samples.problem.kind":
        "プロンプトの行ではなく、準備済みのバッチ (completion_mask を持つ "
        "dict) を返してください",
    "get_batch_samples.problem.shape":
        "数の形が {shape} です: プロセス全体の合計として 1 つの数を"
        "返してください",
    "get_batch_samples.problem.count":
        "{where} では、ステップの有効なトークンは 2 プロセス合わせて "
        "{wanted} 個ですが、あなたの数は {got} です",
    "get_batch_samples.judge.passed":
        "ステップの有効なトークンを正確に数えました: GA と "
        "steps_per_generation の {splits} 通りの分け方、2 プロセスで",
})
