"""Privacy attacks: attribute inference (:mod:`core.attacks.attribute`), gradient inversion and
model inversion (:mod:`core.attacks.gradient_inversion`), membership inference as pure
functions over score arrays (:mod:`core.attacks.membership`), and shadow / reference models
trained together (:mod:`core.attacks.shadows`)."""
