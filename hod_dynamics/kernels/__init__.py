"""The compiled kernels (private): machine code of the recursion and of the world-frame
algorithms generated as LLVM IR (:mod:`~hod_dynamics.kernels.rnea_ir`,
:mod:`~hod_dynamics.kernels.partials_ir`, through :mod:`~hod_dynamics.kernels.llvm`), numba's
kernels (:mod:`~hod_dynamics.kernels.rnea_kernels`, :mod:`~hod_dynamics.kernels.floating_kernels`,
:mod:`~hod_dynamics.kernels.regressor_kernels`, compiled as :mod:`~hod_dynamics.kernels.njit`
says), each with the packing of the model arrays it reads, and the choice of the backend
(:mod:`~hod_dynamics.kernels.backend`). Nothing here validates input: the algorithms do, then
call these on checked arrays. Importing this package imports neither numba nor llvmlite.
"""
