"""Checker for notebook 07's ★★★: the step's token count, `get_batch_samples`.

Checked as a property over splits of an optimizer step: GA above, below and
equal to steps_per_generation (k), two steps each (so a step spans two
generations, or a generation two steps), completions of uneven lengths, and
a second process whose count the gather must add.
"""

import torch

from kit.checks.compare import Raised, attempt, describe_error
from kit.checks.core import Mistake, Property, exercise
from kit.checks.messages import MESSAGES
from kit.checks.nb04_grpo_dataloader import (_trainer, first_problem,
                                             judge_facts)
from kit.checks.nb07_loss_types import NOTEBOOK
from kit.i18n import said, text
from kit.trainers import GRPOTrainer


class MyTrainer(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._prepare_inputs(batch) for batch in batches]
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()


# The mistakes: each changes one thing of the right answer.

def _prepared(trainer, epoch_iterator, num_batches, device):
    batches, _ = GRPOTrainer.get_batch_samples(trainer, epoch_iterator,
                                               num_batches, device)
    return [trainer._prepare_inputs(batch) for batch in batches]


class FirstMicroBatch(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = batches[0]["completion_mask"].sum()  # one micro-batch's
        return batches, self.accelerator.gather(tokens).sum()


class CompletionsCounted(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = torch.tensor(sum(len(batch["completion_mask"])
                                  for batch in batches))  # rows, not tokens
        return batches, self.accelerator.gather(tokens).sum()


class TokensBeforeMasking(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = torch.tensor(sum(batch["completion_mask"].numel()
                                  for batch in batches))  # padding too
        return batches, self.accelerator.gather(tokens).sum()


def _generation_tokens(trainer):
    """The active tokens of the last generation: all k slices."""
    return sum(slice_["completion_mask"].sum() for slice_ in trainer._buffer)


class GenerationCount(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        # TRL issue 5619: the generation's count, right only when k == GA
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = _generation_tokens(self)
        return batches, self.accelerator.gather(tokens).sum()


class GatheredOnTheMainProcess(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        if self.accelerator.is_main_process:  # the others keep their own
            tokens = self.accelerator.gather(tokens).sum()
        return batches, tokens


class RescaledGenerationCount(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        # TRL 1.16: the generation's count x GA / k, right on average only
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = (_generation_tokens(self) * num_batches
                  / self.args.steps_per_generation)
        return batches, self.accelerator.gather(tokens).sum()


class NotGathered(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, tokens  # this process's tokens only


class GatherNotSummed(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens)  # one per process


class NotPrepared(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = GRPOTrainer.get_batch_samples(self, epoch_iterator,
                                                   num_batches, device)
        # prompt rows: there is no completion_mask to count yet
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()


# ------------------------------------------------------------ observing

# (k, GA) with batch 4 and G = 2: k > GA, k < GA, k == GA and GA = 1
SPLITS = ((4, 2), (2, 4), (2, 2), (1, 1))
BATCH, G, STEPS, WIDTH = 4, 2, 2, 5
OTHER = 2  # the other process counts twice our tokens, in each micro-batch


def _uneven_generations(trainer):
    """Generation g's row i has (i * i + g) % WIDTH + 1 active tokens:
    slices, steps and generations all count differently."""
    generations = []

    def fake(rows, greedy=False):
        generations.append(len(rows))
        g = len(generations)
        ids = torch.arange(1000 * g, 1000 * g + len(rows))  # (B,)
        lengths = (torch.arange(len(rows)) ** 2 + g) % WIDTH + 1
        mask = (torch.arange(WIDTH) < lengths[:, None]).long()  # (B, T)
        # padded as generate() pads: the pad token after each completion
        completion_ids = ids[:, None].repeat(1, WIDTH).masked_fill(
            mask == 0, trainer.processing_class.pad_token_id)
        return {"prompt_ids": ids[:, None],
                "prompt_mask": torch.ones(len(rows), 1, dtype=torch.long),
                "completion_ids": completion_ids,
                "completion_mask": mask, "advantages": ids.float(),
                "old_per_token_logps": None, "ref_per_token_logps": None}
    trainer._generate_and_score = fake
    return generations


class TwoProcesses:
    """The trainer's accelerator as process `index` of 2 sees it, while the
    learner's get_batch_samples runs: num_processes, process_index and a
    gather that adds the other process's count. The other process counts
    OTHER times our tokens in whatever it is given (a count gathered once
    or micro-batch by micro-batch adds up the same), so that nothing but a
    gather matches: not our count times 2, not a count divided by 2, not a
    gather made on the main process only. `reduce` is a right answer
    written another way."""

    def __init__(self, accelerator, index):
        self.accelerator, self.process_index = accelerator, index
        self.num_processes, self.is_main_process = 2, index == 0
        self.is_local_main_process = index == 0

    def __getattr__(self, name):
        return getattr(self.accelerator, name)

    def gather(self, tensor):
        tensor = torch.as_tensor(tensor).reshape(-1)
        return torch.cat([tensor, tensor * OTHER])

    def reduce(self, tensor, reduction="sum", scale=1.0):
        both = self.gather(tensor) * scale
        return both.sum() if reduction == "sum" else both.mean()


def _as_process(trainer, index, method):
    def call(*args):
        real, trainer.accelerator = (trainer.accelerator,
                                     TwoProcesses(trainer.accelerator, index))
        try:
            return method(*args)
        finally:
            trainer.accelerator = real
    return call


def _counting_prepares(trainer):
    calls = []
    prepare = trainer._prepare_inputs

    def counted(batch):
        calls.append(type(batch).__name__)
        return prepare(batch)
    trainer._prepare_inputs = counted
    return calls


def _step_facts(trainer, k, GA, index):
    _uneven_generations(trainer)
    prepares = _counting_prepares(trainer)
    trainer.model.train()
    epoch_iterator = iter(trainer.get_train_dataloader())
    split = f"k={k}, GA={GA}, process {index} of 2"
    for step in range(STEPS):
        where = f"{split}, step {step + 1}"
        prepares.clear()
        out = attempt(_as_process(trainer, index, trainer.get_batch_samples),
                      epoch_iterator, GA, "cpu")
        rows = prepares.count("list")
        yield f"batches prepared ({where})", rows, rows != GA and said(
            GET_BATCH_SAMPLES_WORDS["problem.prepared"], count=rows,
            GA=GA)
        if isinstance(out, Raised):
            yield f"raised ({where})", out, text(
                MESSAGES, "facts.raised", what="get_batch_samples",
                error=describe_error(out.error))
        if not (isinstance(out, tuple) and len(out) == 2):
            yield f"returned ({where})", type(out).__name__, said(
                GET_BATCH_SAMPLES_WORDS["problem.pair"],
                kind=type(out).__name__)
        batches, count = out
        if not isinstance(batches, (list, tuple)):  # (count, batches)?
            kind = f"({type(batches).__name__}, {type(count).__name__})"
            yield f"returned ({where})", kind, said(
                GET_BATCH_SAMPLES_WORDS["problem.pair"], kind=kind)
        if not all(isinstance(batch, dict) and "completion_mask" in batch
                   for batch in batches):
            yield f"batches ({where})", "not prepared", said(
                GET_BATCH_SAMPLES_WORDS["problem.kind"])
        if not isinstance(count, (torch.Tensor, int, float)):
            yield f"count ({where})", type(count).__name__, said(
                GET_BATCH_SAMPLES_WORDS["problem.pair"],
                kind=f"(batches, {type(count).__name__})")
        count = torch.as_tensor(count)
        shape = tuple(count.shape)
        yield f"count's shape ({where})", shape, shape != () and said(
            GET_BATCH_SAMPLES_WORDS["problem.shape"], shape=shape)
        wanted = int(sum(batch["completion_mask"].sum()
                         for batch in batches)) * (1 + OTHER)
        got = float(count)
        yield f"count ({where})", got, got != wanted and said(
            GET_BATCH_SAMPLES_WORDS["problem.count"], where=where,
            wanted=wanted, got=f"{got:g}")


def _facts(candidate):
    for number, (k, GA) in enumerate(SPLITS):
        trainer = _trainer(candidate, k=k, batch=BATCH, G=G, GA=GA)
        # the main process and the other, in turn
        yield from _step_facts(trainer, k, GA, index=number % 2)


# What get_batch_samples's checker says, English beside Japanese: its hint
# ladder (gentlest first), each mistake's (title, why, hint), its judge's
# lines.
GET_BATCH_SAMPLES_WORDS = {
    "hints": {
        "en": ["Count active tokens: the sum of completion_mask over every "
               "prepared batch of the step, not the number of completions, "
               "not the mask's size.",
               "Prepare first: batches = [self._prepare_inputs(batch) for "
               "batch in batches]. The parent gives prompt rows; only a "
               "prepared batch has a completion_mask to count.",
               "Count the step, not the generation: the batches you just "
               "prepared are this step's; the buffer's k slices are a step "
               "only when steps_per_generation == GA.",
               "Each process counts only its own batches: return "
               "self.accelerator.gather(tokens).sum(), one number for all."],
        "ja": ["有効なトークンを数えます。ステップの準備済みのすべてのバッチ"
               "の completion_mask の合計で、補完の数でも、マスクの大きさでも"
               "ありません。",
               "まず準備します: `batches = [self._prepare_inputs(batch) for "
               "batch in batches]`。親が返すのはプロンプトの行です。数える "
               "completion_mask があるのは準備済みのバッチだけです。",
               "生成ではなくステップを数えます。いま準備したバッチがこのステ"
               "ップのものです。バッファの k 個のスライスがステップになるのは"
               " steps_per_generation == GA のときだけです。",
               "各プロセスは自分のバッチだけを数えます: "
               "self.accelerator.gather(tokens).sum() を返し、全体で 1 つの"
               "数にします。"]},
    "not_prepared": {
        "en": ("batches not prepared",
               "the parent's batches are prompt rows: nothing is generated "
               "yet, so there are no completion tokens to count",
               "pass each batch through self._prepare_inputs first"),
        "ja": ("バッチを準備していない",
               "親のバッチはプロンプトの行です。まだ何も生成されておらず、数"
               "える補完のトークンがありません",
               "まず各バッチを self._prepare_inputs に通してください")},
    "first_micro_batch": {
        "en": ("one micro-batch counted",
               "you counted the first micro-batch's tokens only: with GA > 1 "
               "the step's loss is divided by too few tokens",
               "sum the completion_mask of every batch of the step"),
        "ja": ("1 つのマイクロバッチだけを数えた",
               "最初のマイクロバッチのトークンだけを数えました: GA > 1 ではス"
               "テップの損失を少なすぎるトークン数で割ります",
               "ステップのすべてのバッチの completion_mask を合計してくださ"
               "い")},
    "completions_counted": {
        "en": ("completions counted, not tokens",
               "len() counts completions: \"dapo\" divides by active tokens",
               "batch[\"completion_mask\"].sum(), not len(...)"),
        "ja": ("トークンではなく補完を数えた",
               "len() は補完を数えます: \"dapo\" は有効なトークン数で割ります",
               "len(...) ではなく batch[\"completion_mask\"].sum()")},
    "tokens_before_masking": {
        "en": ("tokens counted before masking",
               "numel() counts the padding after <eos> too: the count is too "
               "big and depends on the longest completion",
               "sum the mask's ones: completion_mask.sum()"),
        "ja": ("マスクの前にトークンを数えた",
               "numel() は <eos> の後のパディングも数えます。数が大きすぎ、い"
               "ちばん長い補完に左右されます",
               "マスクの 1 を合計します: completion_mask.sum()")},
    "generation_count": {
        "en": ("the generation's count (TRL issue 5619)",
               "you counted the whole generation's tokens: that is the "
               "step's only when steps_per_generation == GA",
               "count the batches this step serves, not self._buffer"),
        "ja": ("生成全体の数 (TRL issue 5619)",
               "生成全体のトークンを数えました。それがステップの数になるのは "
               "steps_per_generation == GA のときだけです",
               "self._buffer ではなく、このステップが使うバッチを数えてくだ"
               "さい")},
    "rescaled_generation_count": {
        "en": ("the generation's count rescaled (TRL 1.16)",
               "generation tokens x GA / k is the step's count on average "
               "only: exact when every slice has as many tokens as the others",
               "count the step's own batches instead of rescaling"),
        "ja": ("生成全体の数をスケールし直した (TRL 1.16)",
               "生成のトークン数 x GA / k がステップの数になるのは平均として"
               "だけです。正確なのはどのスライスも同じトークン数のときです",
               "スケールし直さず、ステップ自身のバッチを数えてください")},
    "gathered_on_the_main_process": {
        "en": ("gathered on the main process only",
               "the gather sits under `if self.accelerator.is_main_process`: "
               "every other process divides its loss by its own count, and "
               "the processes' gradients no longer add up to the step's",
               "gather on every process: the count is one number for all"),
        "ja": ("メインプロセスだけで集約",
               "gather が `if self.accelerator.is_main_process` の中にありま"
               "す。ほかのプロセスは自分の数で損失を割り、各プロセスの勾配の和"
               "がステップの勾配になりません",
               "すべてのプロセスで gather します。数は全体で 1 つです")},
    "property:second_process": {
        "en": ("a second process",
               "right on the main process, wrong on the other: every "
               "process must return the same count, gathered from all"),
        "ja": ("2 つ目のプロセス",
               "メインプロセスでは正しく、もう一方で違います。どのプロセスも、"
               "全体から集めた同じ数を返す必要があります")},
    "property:k_differs_from_GA": {
        "en": ("steps_per_generation ≠ GA",
               "right while k equals GA, wrong when a generation serves more "
               "or fewer micro-batches than a step takes: count the batches "
               "of this step"),
        "ja": ("steps_per_generation ≠ GA",
               "k が GA と等しいときは正しく、1 回の生成が 1 ステップより多い"
               "か少ないマイクロバッチを供給すると違います。このステップのバッ"
               "チを数えます")},
    "property:second_step": {
        "en": ("the second step",
               "right at a run's first step, wrong at the next: each step "
               "counts the batches it was just given"),
        "ja": ("2 つ目のステップ",
               "最初のステップでは正しく、次のステップで違います。各ステップ"
               "は、いま渡されたバッチを数えます")},
    "property:several_micro_batches": {
        "en": ("several micro-batches",
               "right when a step is one micro-batch (GA = 1), wrong when it "
               "is several: add up the active tokens of every batch the "
               "step was given"),
        "ja": ("複数のマイクロバッチ",
               "1 ステップが 1 マイクロバッチ (GA = 1) のときは正しく、複数だ"
               "と違います。ステップに渡されたすべてのバッチの有効なトークンを"
               "合計します")},
    "not_gathered": {
        "en": ("not gathered over processes",
               "each process would divide by its own tokens: with 2 "
               "processes the step's loss is no longer one token mean",
               "self.accelerator.gather(tokens).sum()"),
        "ja": ("プロセス間で集めていない",
               "各プロセスが自分のトークン数で割ることになります: 2 プロセス"
               "ではステップの損失が 1 つのトークン平均ではなくなります",
               "self.accelerator.gather(tokens).sum()")},
    "gather_not_summed": {
        "en": ("gathered but not summed",
               "gather returns one count per process: num_items_in_batch "
               "must be one number",
               "add .sum() after the gather"),
        "ja": ("集めたが合計していない",
               "gather はプロセスごとに 1 つの数を返します: "
               "num_items_in_batch は 1 つの数でなければなりません",
               "gather の後に .sum() を付けてください")},
    "problem.prepared": {
        "en": "{count} of the step's {GA} batches went through "
              "_prepare_inputs: prepare each one, once",
        "ja": "ステップの {GA} 個のバッチのうち {count} 個が "
              "_prepare_inputs を通りました。それぞれを 1 回ずつ準備してくだ"
              "さい"},
    "problem.pair": {
        "en": "get_batch_samples returned {kind}: return (batches, count), "
              "the count a number (the Trainer passes it on as "
              "num_items_in_batch)",
        "ja": "get_batch_samples が {kind} を返しました: (batches, count) を"
              "返し、count は数にしてください (Trainer はそれを "
              "num_items_in_batch として渡します)"},
    "problem.kind": {
        "en": "return the prepared batches (dicts with a completion_mask), "
              "not the prompt rows",
        "ja": "プロンプトの行ではなく、準備済みのバッチ (completion_mask を"
              "持つ dict) を返してください"},
    "problem.shape": {
        "en": "the count has shape {shape}: return one number, the sum over "
              "processes",
        "ja": "数の形が {shape} です。プロセス全体の合計として 1 つの数を返"
              "してください"},
    "problem.count": {
        "en": "with {where} the step has {wanted} active tokens over the two "
              "processes, your count is {got}",
        "ja": "{where} では、ステップの有効なトークンは 2 プロセス合わせて "
              "{wanted} 個ですが、あなたの数は {got} です"},
    "judge.passed": {
        "en": "the step's active tokens, counted exactly, for {splits} "
              "splits of GA against steps_per_generation, over 2 processes",
        "ja": "ステップの有効なトークンを正確に数えました: GA と "
              "steps_per_generation の {splits} 通りの分け方、2 プロセスで"},
}


@exercise("get_batch_samples", words=GET_BATCH_SAMPLES_WORDS,
          stars=3, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer.get_batch_samples",),
          answer=MyTrainer, method="get_batch_samples",
          judge=lambda candidate, seen, expected: _judge_counts(seen),
          mistakes=[
              Mistake("not_prepared", NotPrepared, rung=2),
              Mistake("first_micro_batch", FirstMicroBatch, rung=1),
              Mistake("completions_counted", CompletionsCounted, rung=1),
              Mistake("tokens_before_masking", TokensBeforeMasking, rung=1),
              Mistake("generation_count", GenerationCount, rung=3),
              Mistake("rescaled_generation_count", RescaledGenerationCount,
                      rung=3),
              Mistake("not_gathered", NotGathered, rung=4),
              Mistake("gather_not_summed", GatherNotSummed, rung=4),
              Mistake("gathered_on_the_main_process",
                      GatheredOnTheMainProcess, rung=4),
          ], properties=[
              Property("second_process", "process 1 of 2", rung=4),
              Property("k_differs_from_GA", lambda name: any(
                  split in name for split in ("k=4, GA=2", "k=2, GA=4")),
                       rung=3),
              Property("second_step", "step 2", rung=3),
              Property("several_micro_batches",
                       lambda name: "GA=1," not in name, rung=1),
          ])
def observe_get_batch_samples(candidate):
    # loss_type "grpo" (the default): the kit's own get_batch_samples then
    # returns the Trainer's prompt rows, so super() does none of the work
    # the learner writes. The Trainer seeds torch; the shuffle draws from
    # it: leave the notebook's random state as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        seen = attempt(lambda: first_problem(_facts(candidate)))
        if isinstance(seen, dict) and any(name.startswith("count (")
                                          for name in seen):
            # once counts are reached: name a mistake by the counts of
            # every split, not one that happens to match another mistake's
            # first one (a [:, 1:] mask is not "one micro-batch counted"),
            # and see which splits a wrong count is wrong in
            torch.manual_seed(0)
            seen["every count"] = attempt(lambda: {
                name: value for name, value, _ in _facts(candidate)
                if name.startswith("count (")})
        return seen


def _judge_counts(seen):
    judge_facts(seen, "get_batch_samples")
    return said(GET_BATCH_SAMPLES_WORDS["judge.passed"],
                splits=len(SPLITS))
