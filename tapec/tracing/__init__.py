"""Graph mode: tracing a Python function into one program (guards, Variable effects),
the calls that key its traces, and TensorSpec."""
