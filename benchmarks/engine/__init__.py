"""No server: offline ceilings (runtimes, quantized variants), the decoder's step, the generation engine's tokens/s."""
