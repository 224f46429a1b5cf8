"""SM counts of the GPUs the kernels are tuned for: the defaults of the configs' choosers where no
device is at hand (CI compiles, the B200 model). A call on a real device passes that device's count."""

H100_SM_COUNT = 132  # H100 SXM (the lent H100; an H200 has the same)
B200_SM_COUNT = 148  # B200, the leaderboard's GPU
