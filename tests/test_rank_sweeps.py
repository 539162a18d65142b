"""challenges/rank_sweeps.py, what the multi-GPU puzzles' sweeps share: a call lasts until its slowest rank is done,
and a kernel's kind is read from its name (the sweeps themselves run in tests/test_puzzle25.py and 26's)."""

from challenges.rank_sweeps import kind_of, slowest_median_ms


def test_a_call_is_its_slowest_ranks_then_the_median_over_calls():
    # Rank 1 is slower on the first two calls, rank 0 on the third: the slowest per call is 5, 6, 9.
    assert slowest_median_ms([[1.0, 2.0, 9.0], [5.0, 6.0, 3.0]]) == 6.0


def test_kernels_are_told_apart_by_name():
    assert kind_of("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == "nccl"
    assert kind_of("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == "matmul"
    assert kind_of("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8") == "matmul"
    assert kind_of("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>") == "other"
