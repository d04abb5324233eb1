"""Answers built on the model: advice, occupancy, GPU comparison and suites. Torch-free."""
