"""A small MLP on scikit-learn's digits, trained twice from the same weights: by Keras's
`model.fit`, and by a hand-written loop (GradientTape + Adam.apply_gradients in a
`tf.function` step) that draws the same shuffled batches. The two agree step for step.

    python examples/keras_digits.py
"""
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tapec as tf
from tapec import keras

EPOCHS, BATCH_SIZE, SEED = 10, 32, 0


def load_data():
    """(x_train, x_test, y_train, y_test): 8x8 images as 64 floats in [0, 1], int labels."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    return train_test_split(x, digits.target.astype(np.int64), test_size=0.25,
                            random_state=0)


def make_model():
    model = keras.Sequential([
        keras.Input(shape=(64,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def train_with_fit(model, x, y):
    """Per-epoch losses of `model.fit` (shuffled with tapec.random's global seed)."""
    tf.random.set_seed(SEED)
    history = model.fit(x, y, batch_size=BATCH_SIZE, epochs=EPOCHS, verbose=0)
    return history.history["loss"]


def train_by_hand(model, x, y):
    """The same training written out: each epoch shuffles with
    tf.random.shuffle(tf.range(n)) (what fit does), and a tf.function step takes the
    gradient with a tape and applies Adam. Returns the per-epoch losses, each the mean
    over samples of the batch losses (as fit logs it)."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    optimizer = keras.optimizers.Adam(learning_rate=0.01)

    @tf.function
    def train_step(x_batch, y_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(y_batch, model(x_batch, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    tf.random.set_seed(SEED)
    n = len(y)
    losses = []
    for _ in range(EPOCHS):
        order = tf.random.shuffle(tf.range(n, dtype=tf.int64)).numpy()
        total = 0.0
        for start in range(0, n, BATCH_SIZE):
            rows = order[start:start + BATCH_SIZE]
            total += float(train_step(x[rows], y[rows])) * len(rows)
        losses.append(total / n)
    return losses


def accuracy(model, x, y):
    return float(np.mean(np.argmax(model.predict(x, verbose=0), axis=1) == y))


def main():
    x_train, x_test, y_train, y_test = load_data()
    tf.random.set_seed(SEED)
    by_fit = make_model()
    by_hand = make_model()
    by_hand.set_weights(by_fit.get_weights())           # the same starting point

    fit_losses = train_with_fit(by_fit, x_train, y_train)
    hand_losses = train_by_hand(by_hand, x_train, y_train)

    print(f"fit:     final loss {fit_losses[-1]:.6f}, test accuracy "
          f"{accuracy(by_fit, x_test, y_test):.4f}")
    print(f"by hand: final loss {hand_losses[-1]:.6f}, test accuracy "
          f"{accuracy(by_hand, x_test, y_test):.4f}")
    difference = max(abs(a - b) for a, b in zip(fit_losses, hand_losses))
    print(f"largest difference of the per-epoch losses: {difference:.1e}")


if __name__ == "__main__":
    main()
