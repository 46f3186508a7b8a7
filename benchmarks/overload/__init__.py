"""Load past capacity and the scheduler under it: goodput, refusals, the event loop's time, batching."""
