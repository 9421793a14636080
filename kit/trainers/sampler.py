"""What GRPO's dataloader hands out: prompts, G times each, k times over.

One formula, `prompts_per_generation`, says how many prompts one
`generate()` call needs; the trainer and the explorer (`kit.explore`) both
ask it rather than each writing it down.
"""

import torch
from torch.utils.data import Sampler


def prompts_per_generation(per_device_train_batch_size, steps_per_generation,
                           num_generations, num_processes=1):
    """Prompts one generate() call serves, all processes together.

    The batch size counts completions, G of them per prompt, and one
    generation serves k micro-steps on every process: B·k·processes / G.
    """
    completions = (per_device_train_batch_size * steps_per_generation
                   * num_processes)  # the big batch of every process
    return completions // num_generations


class RepeatSampler(Sampler):
    """Indices for GRPO's dataloader, TRL's layout.

    Shuffle the prompts (a new order each epoch, fixed by the seed); take
    `prompts_per_batch` of them; repeat each one G times in a row (a group);
    yield that big batch `repeats` times (once per step it serves); move on.
    Prompts that do not fill a last big batch wait for the next epoch.
    """

    def __init__(self, size, num_generations, prompts_per_batch, repeats,
                 seed):
        self.size, self.G = size, num_generations
        self.prompts_per_batch, self.repeats = prompts_per_batch, repeats
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):  # the Trainer calls this before each epoch
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(self.size, generator=generator).tolist()
        for start in range(0, len(self) // (self.G * self.repeats),
                           self.prompts_per_batch):
            big_batch = order[start:start + self.prompts_per_batch]
            for _ in range(self.repeats):
                for index in big_batch:
                    yield from [index] * self.G

    def __len__(self):
        usable = self.size - self.size % self.prompts_per_batch
        return usable * self.G * self.repeats

