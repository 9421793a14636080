"""Wrong and right answers to the exercises that are a class."""
