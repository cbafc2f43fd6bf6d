"""Privacy attacks as pure functions over arrays (testable without FL): attribute inference
(:mod:`core.attacks.attribute`)."""
