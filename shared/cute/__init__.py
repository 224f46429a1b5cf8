"""CuTe DSL helpers shared by the kernels (pointer wrapping, compile cache, mainloop pieces)."""
