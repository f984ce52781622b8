/* Time a CasADi-generated function over a batch of jets, looped in C (benchmark tool).
 *
 * Build: cc -O2 -DFN=td2_panda -include td2_panda.h casadi_loop.c td2_panda.c -o loop -lm
 * Run:   loop JETS.bin B IN_LEN OUT_LEN REPS OUT.bin
 * JETS.bin holds B jets of IN_LEN doubles (row-major (rows, n)); the program evaluates FN on
 * each, REPS times over the whole batch, prints the median time per sample in microseconds
 * and writes the B outputs (OUT_LEN doubles each) of the last pass to OUT.bin. Times are the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), like the Python side of the benchmark: on a
 * machine shared with other jobs, wall time would count the waits for a core.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 7) return 2;
  long B = atol(argv[2]), nin = atol(argv[3]), nout = atol(argv[4]), reps = atol(argv[5]);
  double *in = malloc(sizeof(double) * B * nin), *out = malloc(sizeof(double) * B * nout);
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(in, sizeof(double), B * nin, f) != (size_t)(B * nin)) return 3;
  fclose(f);
  casadi_int sz_arg, sz_res, sz_iw, sz_w;
  CAT(FN, _work)(&sz_arg, &sz_res, &sz_iw, &sz_w);
  const casadi_real **arg = malloc(sizeof(void *) * (sz_arg + 1));
  casadi_real **res = malloc(sizeof(void *) * (sz_res + 1));
  casadi_int *iw = malloc(sizeof(casadi_int) * (sz_iw + 1));
  casadi_real *w = malloc(sizeof(casadi_real) * (sz_w + 1));
  double *times = malloc(sizeof(double) * reps);
  for (long r = 0; r < reps; r++) {
    double t0 = now();
    for (long b = 0; b < B; b++) {
      arg[0] = in + b * nin;
      res[0] = out + b * nout;
      FN(arg, res, iw, w, 0);
    }
    times[r] = (now() - t0) / B;
  }
  qsort(times, reps, sizeof(double), cmp);
  printf("%.6f\n", times[reps / 2] * 1e6);
  f = fopen(argv[6], "wb");
  fwrite(out, sizeof(double), B * nout, f);
  fclose(f);
  return 0;
}
