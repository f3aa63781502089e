"""The GradientTape examples of the TensorFlow documentation, run with tapec.

    python examples/seeds.py
"""
import tapec as tf  # noqa: F401  (the examples below use TensorFlow's spelling)
from tapec.cli import demo

if __name__ == "__main__":
    for example in demo.EXAMPLES:
        print(f"== {example.__name__}")
        example()
