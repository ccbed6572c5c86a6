// MPI's all-reduce on the same sizes as allreduce_gloo.cc, measured once to choose the library
// (docs/distribute.md). Launched with mpirun -np 2.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < iters + 2; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      if (i >= 2) times.push_back(MPI_Wtime() - start);
    }
    std::sort(times.begin(), times.end());
    if (rank == 0) std::printf("mpi %zu %.6f\n", bytes, times[times.size() / 2]);
  }
  MPI_Finalize();
  return 0;
}
