"""GRPOConfig: the few settings GRPO adds to TrainingArguments.

Each field is documented once, in its `help`, and checked once, by its row
in `RULES`; a new field adds one of each.
"""

import math
from dataclasses import dataclass, field

from transformers import TrainingArguments

from kit.losses import GRPO_LOSSES, SCALE_REWARDS, SCALE_REWARDS_ALIASES
from kit.multi_rewards import MULTI_OBJECTIVE
from kit.trainers.guards import (BATCH_RULES, check_choice, check_fields,
                                 check_reward_weights, refusal)

# (field, kind, bound, fix): checked in this order, after BATCH_RULES
RULES = [
    ("num_generations", int, ">= 2",
     "advantages compare completions of the same prompt"),
    ("steps_per_generation", int, ">= 1",
     "1 generates for every micro-step"),
    ("max_prompt_length", int, ">= 1", "try 32"),
    ("max_completion_length", int, ">= 1", "try 8"),
    ("temperature", float, "> 0", "1.0 samples the policy as it is"),
    ("epsilon", float, "> 0", "try 0.2"),
    ("beta", float, ">= 0", "0 turns the KL off; try 0.04"),
    ("sapo_temperature_pos", float, "> 0", "try 1.0"),
    ("sapo_temperature_neg", float, "> 0", "try 1.05"),
    ("reward_timeout", float, "> 0", "try 60"),
    ("top_p", float, "> 0", "1.0 keeps every token"),
    ("top_p", float, "<= 1", "1.0 keeps every token"),
    ("top_k", int, ">= 0", "0 keeps every token"),
    ("repetition_penalty", float, "> 0", "1.0 leaves the logits as they are"),
]


# Fields that only sapo reads (kit.losses.GRPO_LOSSES): a change to one
# with another loss_type is refused, as epsilon_high is outside cispo.
SAPO_FIELDS = ("sapo_temperature_pos", "sapo_temperature_neg")


@dataclass
class GRPOConfig(TrainingArguments):
    num_generations: int = field(default=8, metadata={
        "help": "G: completions per prompt, compared within their group."})
    steps_per_generation: int = field(default=None, metadata={
        "help": "k: micro-steps served by one generate() call "
                "(default: gradient_accumulation_steps)."})
    max_prompt_length: int = field(default=32, metadata={
        "help": "Prompts with more tokens are refused."})
    max_completion_length: int = field(default=8, metadata={
        "help": "New tokens generated per completion, at most."})
    temperature: float = field(default=1.0, metadata={
        "help": "Sampling temperature of generation."})
    # TRL 1.16's sampling filters, its defaults: all off. The loss scores
    # the tempered policy unfiltered, as TRL's does.
    top_p: float = field(default=1.0, metadata={
        "help": "Sample from the fewest tokens whose probabilities add up "
                "to top_p (1.0: every token)."})
    top_k: int = field(default=0, metadata={
        "help": "Sample from the top_k likeliest tokens (0: every token; "
                "1 is greedy and refused)."})
    min_p: float = field(default=None, metadata={
        "help": "Drop tokens less likely than min_p times the likeliest "
                "(None: none dropped; 0.01 to 0.2 is usual)."})
    repetition_penalty: float = field(default=1.0, metadata={
        "help": "Above 1.0, tokens already in the prompt or completion get "
                "less likely; below, more (1.0: off)."})
    epsilon: float = field(default=0.2, metadata={
        "help": "The clip: ratios move within [1 - epsilon, 1 + epsilon]."})
    beta: float = field(default=0.0, metadata={
        "help": "Weight of the KL penalty to a frozen reference; 0 is off."})
    # The course's defaults: notebook 05's form, whose run meets its learning
    # guard. TRL 1.16 defaults to loss_type="dapo" (a token mean over the
    # whole step, no length bias); notebook 07 shows why that matters.
    loss_type: str = field(default="grpo", metadata={
        "help": "What divides the token losses: 'grpo' (a mean per "
                "completion), 'bnpo', 'dr_grpo' or 'dapo'; or 'cispo' (the "
                "weight clipped, not the update) and 'sapo' (a soft gate) "
                "(kit.losses)."})
    scale_rewards: str = field(default="group", metadata={
        "help": "Advantages' spread: 'group', 'batch' or 'none'."})
    reward_weights: list = field(default=None, metadata={
        "help": "One weight per reward function, in reward_funcs' order "
                "(None: 1.0 each)."})
    multi_objective_aggregation: str = field(
        default="sum_then_normalize", metadata={
            "help": "'sum_then_normalize' (weighted sum, then scale_rewards) "
                    "or 'normalize_then_sum' (GDPO: each function "
                    "normalised in its group, then summed; kit.losses)."})
    mask_truncated_completions: bool = field(default=False, metadata={
        "help": "Leave completions cut by max_completion_length (no <eos>) "
                "out of the loss (DAPO's advice); they are still scored."})
    # TRL 1.16 defaults to True. The kit keeps the paper's KL, the one
    # notebook 05's grpo_loss exercise writes (its section on TRL says so);
    # with beta = 0, the default of both, the flag changes nothing, so the
    # kit refuses True there.
    use_bias_correction_kl: bool = field(default=False, metadata={
        "help": "Multiply the per-token KL by the ratio exp(logps - old) "
                "(TRL 1.16's default: its gradient is the unbiased "
                "reverse-KL gradient of DeepSeek-V3.2; it changes the KL "
                "gradient even on-policy). False: the paper's KL."})
    # "cispo" and "sapo" only: TRL 1.16's names, meanings and defaults
    epsilon_high: float = field(default=None, metadata={
        "help": "cispo's cap on the importance weight (None: epsilon, as "
                "TRL; ScaleRL recommends 5.0). The kit's clip is "
                "symmetric, so no other loss type reads it."})
    sapo_temperature_pos: float = field(default=1.0, metadata={
        "help": "sapo's gate temperature for tokens of positive advantage."})
    sapo_temperature_neg: float = field(default=1.05, metadata={
        "help": "sapo's gate temperature for the others."})
    importance_sampling_level: str = field(default="token", metadata={
        "help": "The ratio's level: 'token' (one a token, the paper's) or "
                "'sequence' (GSPO: one a completion, the geometric mean of "
                "its token ratios), as TRL 1.16."})
    # not TRL's: its reward functions run unbounded
    reward_timeout: float = field(default=60.0, metadata={
        "help": "Seconds one call of a reward function may take; past it "
                "training stops, naming the function."})
    remove_unused_columns: bool = False  # reward functions read the columns

    def __post_init__(self):
        check_fields(self, BATCH_RULES)  # before the defaults use them
        if self.steps_per_generation is None:
            self.steps_per_generation = self.gradient_accumulation_steps
        check_fields(self, RULES)
        if isinstance(self.scale_rewards, bool):  # TRL's older form
            self.scale_rewards = SCALE_REWARDS_ALIASES[self.scale_rewards]
        check_choice(self, "loss_type", GRPO_LOSSES)
        check_choice(self, "scale_rewards", SCALE_REWARDS)
        check_choice(self, "importance_sampling_level",
                     ("token", "sequence"))
        self.check_rewards_aggregation()
        self.check_sampling_filters()
        if self.epsilon_high is not None:
            check_fields(self, [("epsilon_high", float, "> 0", "try 5.0")])
            if self.loss_type != "cispo":  # TRL's upper clip: not the kit's
                raise refusal("epsilon_high_unread", value=self.epsilon_high,
                              loss_type=self.loss_type)
        self.check_sapo_temperatures()
        self.check_bias_correction()
        check_not_greedy(self.temperature)
        check_whole_groups(self.per_device_train_batch_size,
                           self.num_generations)
        super().__post_init__()

    def check_sapo_temperatures(self):
        """Changed from their defaults, and only where the loss reads them:
        else the change does nothing, silently (a typo, or the wrong
        loss_type)."""
        for name in SAPO_FIELDS:
            value = getattr(self, name)
            default = self.__dataclass_fields__[name].default
            readers = sorted(kind for kind, loss in GRPO_LOSSES.items()
                             if name in loss.config_fields)
            if value != default and self.loss_type not in readers:
                raise refusal("loss_field_unread", name=name, value=value,
                              loss_type=self.loss_type, readers=readers,
                              default=default)

    def check_rewards_aggregation(self):
        """reward_weights: numbers (their count is checked against the
        functions by GRPOTrainer); an aggregation TRL names, and a
        scale_rewards that it reads."""
        self.reward_weights = check_reward_weights(self.reward_weights)
        check_choice(self, "multi_objective_aggregation", MULTI_OBJECTIVE)
        if (self.multi_objective_aggregation == "normalize_then_sum"
                and self.scale_rewards != "group"):
            raise refusal("scale_rewards_unread", value=self.scale_rewards)
        if not isinstance(self.mask_truncated_completions, bool):
            raise refusal("choice", owner="GRPOConfig",
                          name="mask_truncated_completions",
                          choices="True, False",
                          value=self.mask_truncated_completions)

    def check_sampling_filters(self):
        """min_p within [0, 1] when set; top_k=1 is greedy: every
        completion of a prompt the same, every advantage 0."""
        if self.min_p is not None:
            check_fields(self, [("min_p", float, ">= 0", "try 0.05"),
                                ("min_p", float, "<= 1", "try 0.05")])
        if self.top_k == 1:
            raise refusal("greedy_top_k")

    def check_bias_correction(self):
        """A bool, and one with something to correct: the KL term, which
        beta = 0 (the default) leaves out."""
        if not isinstance(self.use_bias_correction_kl, bool):
            raise refusal("choice", owner="GRPOConfig",
                          name="use_bias_correction_kl", choices="True, False",
                          value=self.use_bias_correction_kl)
        if self.use_bias_correction_kl and self.beta == 0:
            raise refusal("kl_correction_unread")

    def slices_outlive_step(self):
        """True when one generation's slices span optimizer steps: the
        policy moves before its last slice is trained (off-policy)."""
        return bool(self.gradient_accumulation_steps
                    % self.steps_per_generation)


# Below this, a logit gap of 1 gives exp(-1/T) = 0 in float32 (its smallest
# number is 2**-149; exp rounds to 0 below log(2**-150) = -103.97)
GREEDY_BELOW = 1 / (150 * math.log(2))  # 0.00962


def check_not_greedy(temperature):
    """Sampling at this temperature must still give G different tries."""
    if temperature < GREEDY_BELOW:
        raise refusal("greedy", shown=f"{temperature:g}",
                      least=math.ceil(GREEDY_BELOW * 100) / 100)


def check_whole_groups(batch, G):
    """The batch counts completions: it must hold whole groups of G."""
    if batch % G:
        raise refusal("whole_groups", batch=batch, G=G,
                      lower=batch - batch % G or G,
                      higher=batch - batch % G + G)
