"""Output values: what the pools receive must be what the model computes (checked under POOL-2)."""
