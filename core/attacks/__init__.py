"""Privacy attacks: attribute inference (:mod:`core.attacks.attribute`), gradient inversion and
model inversion (:mod:`core.attacks.gradient_inversion`), membership inference as pure
functions over score arrays (:mod:`core.attacks.membership`; its shadow / reference models are
trained by :mod:`core.engine.shadow_training`, below the attacks and the defenses)."""
