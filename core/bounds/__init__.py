"""Closed-form bounds and privacy accountants (pure numpy, instant): TAPPFL Theorems 1-2
(:mod:`core.bounds.tappfl`) and (ε, δ) composition over FL rounds
(:mod:`core.bounds.accountants`)."""
