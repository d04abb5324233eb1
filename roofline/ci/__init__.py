"""The regression gate: judging a run against a baseline, its output formats, and baseline updates."""
