"""The defaults of identification that ``hod-dynamics identify --help`` shows: plain numbers,
importable without the numerical stack (the modules that use them import scipy and the
compiled kernels, half a second that every command would otherwise pay to build its parser)."""

MARGIN = 0.1                # m, the inflation of the joint-origin segments of a bounding volume
MASS_FACTOR = 2.0           # each body's mass within [m / F, m F] of the URDF's m
TOTAL_TOLERANCE = 0.02      # a total mass given as one value M: M (1 +- this)
WEIGHTS = (1.0, 10.0, 100.0, 1000.0, 10000.0)   # the weights of the prior cross-validation chooses among
FOLDS = 5                   # time blocks of the cross-validation
PAYLOAD_SIZE = 0.1          # m, a payload's extent (the test of its excitation)
