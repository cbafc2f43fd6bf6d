"""Defenses: TAPPFL (core.defenses.tappfl), DP noise and pruning on uploads (dp, compression),
and the other papers' mechanisms. Submodules are imported lazily by their users."""
