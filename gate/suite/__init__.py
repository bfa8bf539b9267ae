"""What is judged: the config, the cases, their defaults and the slice a command selects."""
