"""One module per part (a defense, an attack or a group of attack presets, a signal): each
registers its declaration with :mod:`core.parts` on import, and :mod:`core.parts` imports every
module here, so adding a file is the one edit that makes a part appear everywhere."""
