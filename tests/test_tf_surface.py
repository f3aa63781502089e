"""TensorFlow's surface beyond ops: tf.Module, tf.name_scope, tf.errors, tf.config,
tf.device, tf.debugging, tf.print, tf.nest, formatting, argument names. The expected
values here were read off TensorFlow 2.21 (tests/test_tf_surface_against_tensorflow.py
compares with TensorFlow directly where it is installed)."""
import collections
import pickle
import sys

import numpy as np
import pytest

import tapec as tf


# --- tf.Module -------------------------------------------------------------------------------

class Leaf(tf.Module):
    def __init__(self, tag, name=None):
        super().__init__(name=name)
        self.z = tf.Variable(1.0, name=f"{tag}_z")
        self.b = tf.Variable(2.0, trainable=False, name=f"{tag}_b")


class Holder(tf.Module):
    def __init__(self):
        super().__init__()
        self.y_list = [Leaf("a1"), tf.Variable(3.0, name="l0")]
        self.a_dict = {"k2": Leaf("a2"), "k1": tf.Variable(4.0, name="d1")}
        self.m = Leaf("a3")
        self.shared = self.m.z
        self.v = tf.Variable(5.0, name="v")


def _names(values):
    return [v.name for v in values]


def test_module_order_is_tensorflows():
    """Attributes sorted by name, dict entries by key, own leaves before submodules'
    (depth first), each object once: the order TensorFlow 2.21 gives."""
    h = Holder()
    assert _names(h.variables) == ["d1:0", "a3_z:0", "v:0", "l0:0", "a2_b:0", "a2_z:0",
                                   "a3_b:0", "a1_b:0", "a1_z:0"]
    assert _names(h.trainable_variables) == ["d1:0", "a3_z:0", "v:0", "l0:0", "a2_z:0",
                                             "a1_z:0"]
    assert _names(h.non_trainable_variables) == ["a2_b:0", "a3_b:0", "a1_b:0"]
    assert [m.name for m in h.submodules] == ["leaf", "leaf", "leaf"]
    assert [m.z.name for m in h.submodules] == ["a2_z:0", "a3_z:0", "a1_z:0"]
    assert isinstance(h.variables, tuple) and isinstance(h.submodules, tuple)


def test_module_cycles_and_self_references_end():
    h = Holder()
    h.m.parent = h           # a cycle
    h.me = h                 # itself
    h.twice = [h.m, h.m]
    assert _names(h.variables) == ["d1:0", "a3_z:0", "v:0", "l0:0", "a2_b:0", "a2_z:0",
                                   "a3_b:0", "a1_b:0", "a1_z:0"]
    assert len(h.submodules) == 3


def test_module_flatten_with_paths():
    h = Holder()
    paths = [(p, v.name) for p, v in h._flatten(with_path=True,
                                                 predicate=lambda v: isinstance(v, tf.Variable))]
    # with paths nothing is de-duplicated: the shared variable comes twice
    assert paths[:5] == [(("a_dict", "k1"), "d1:0"), (("shared",), "a3_z:0"), (("v",), "v:0"),
                         (("y_list", 1), "l0:0"), (("a_dict", "k2", "b"), "a2_b:0")]
    assert (("m", "z"), "a3_z:0") in paths and len(paths) == 10
    shallow = _names(h._flatten(recursive=False, predicate=lambda v: isinstance(v, tf.Variable)))
    assert shallow == ["d1:0", "a3_z:0", "v:0", "l0:0"]


def test_module_names_and_scopes():
    class MyDenseLayer(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.w = tf.Variable(1.0, name="w")

        @tf.Module.with_name_scope
        def scoped(self):
            with tf.name_scope("inner") as scope:
                return scope

    layer = MyDenseLayer()
    assert layer.name == "my_dense_layer" and layer.name_scope.name == "my_dense_layer/"
    assert layer.w.name == "my_dense_layer/w:0" and layer.scoped() == "my_dense_layer/inner/"
    assert MyDenseLayer.scoped.__name__ == "scoped"
    with tf.name_scope("outer"):
        nested = MyDenseLayer(name="d_1")
    assert nested.name == "d_1" and nested.name_scope.name == "outer/d_1/"
    assert tf.Module().name == "module"


@pytest.mark.parametrize("name", ["bad name", "1abc", "", "a/b", "é", 3])
def test_module_names_must_be_identifiers(name):
    with pytest.raises(ValueError, match="is not a valid module name"):
        tf.Module(name=name)


def test_name_scope():
    with tf.name_scope("a") as a:
        with tf.name_scope("b") as ab:
            v = tf.Variable(1.0, name="v")
            unnamed = tf.Variable(1.0)
        with tf.name_scope("a") as aa, tf.name_scope("") as empty:
            pass
        with tf.name_scope("x/") as absolute:
            inside = tf.Variable(1.0, name="i")
    assert (a, ab, aa, empty, absolute) == ("a/", "a/b/", "a/a/", "", "x/")
    assert (v.name, unnamed.name, inside.name) == ("a/b/v:0", "a/b/Variable:0", "x/i:0")
    assert tf.Variable(1.0, name="top").name == "top:0"
    assert tf.name_scope("n").name == "n"
    for bad in (None, 3):
        with pytest.raises(ValueError, match="name for name_scope must be a string"):
            tf.name_scope(bad)


def test_scoped_variables_keep_their_names_through_copies():
    import copy
    with tf.name_scope("s"):
        v = tf.Variable([1.0, 2.0], name="v")
    with tf.name_scope("other"):
        copied, unpickled = copy.deepcopy(v), pickle.loads(pickle.dumps(v))
    assert copied.name == unpickled.name == "s/v:0"


class Scaler(tf.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = tf.Variable(scale)
        self.calls = tf.Variable(0.0, trainable=False)

    @tf.function
    def __call__(self, x):
        self.calls.assign_add(1.0)
        return x * self.scale


def test_a_function_method_traces_per_instance_and_updates_variables():
    a, b = Scaler(2.0), Scaler(3.0)
    x = tf.constant([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_array_equal(a(x).numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(b(x).numpy(), [3.0, 6.0])
    a.scale.assign(5.0)
    np.testing.assert_array_equal(a(x).numpy(), [5.0, 10.0])
    assert float(a.calls) == 4.0 and float(b.calls) == 3.0
    assert Scaler.__call__.__get__(a).experimental_get_tracing_count() == 1
    assert Scaler.__call__.__get__(b).experimental_get_tracing_count() == 1


def test_trainable_false_is_respected():
    s = Scaler(2.0)
    with tf.GradientTape() as tape:
        y = s(tf.constant(3.0)) * s.calls
    assert _names(tape.watched_variables()) == [s.scale.name]
    g_scale, g_calls = tape.gradient(y, [s.scale, s.calls])
    assert g_calls is None and float(g_scale) == 3.0


# --- tf.errors -------------------------------------------------------------------------------

def test_error_classes():
    e = tf.errors.InvalidArgumentError(None, None, "bad")
    assert isinstance(e, tf.errors.OpError) and isinstance(e, ValueError)
    assert (str(e), e.message, e.error_code, e.op, e.node_def) == ("bad", "bad", 3, None, None)
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is tf.errors.InvalidArgumentError and again.message == "bad"
    assert issubclass(tf.errors.UnimplementedError, NotImplementedError)
    assert tf.errors.OpError(None, None, "m", tf.errors.INTERNAL).error_code == 13
    for name in ["CancelledError", "UnknownError", "DeadlineExceededError", "NotFoundError",
                 "AlreadyExistsError", "PermissionDeniedError", "UnauthenticatedError",
                 "ResourceExhaustedError", "FailedPreconditionError", "AbortedError",
                 "OutOfRangeError", "InternalError", "UnavailableError", "DataLossError"]:
        cls = getattr(tf.errors, name)
        assert issubclass(cls, tf.errors.OpError) and cls(None, None, "m").message == "m"


def test_reshape_to_a_different_size_is_an_invalid_argument():
    x = tf.constant([1, 2, 3, 4, 5, 6])
    for shape in ([5], [-1, 4]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"^reshape: cannot reshape"):
            tf.reshape(x, shape)
        with pytest.raises(ValueError):          # tapec's contract still holds
            tf.reshape(x, shape)


@pytest.mark.parametrize("call, message", [
    (lambda: tf.add(tf.ones([2]), tf.ones([3])), r"^add: shapes \(2,\) and \(3,\) cannot"),
    (lambda: tf.ones([2]) * tf.ones([3]), r"^multiply: shapes"),
    (lambda: tf.matmul(tf.ones([2, 3]), tf.ones([2, 3])), r"^matmul: inner dimensions"),
    (lambda: tf.broadcast_to(tf.ones([3]), [2, 2]), r"^broadcast_to: shape \(3,\) cannot"),
])
def test_incompatible_shapes_are_invalid_arguments(call, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_ragged_lists_are_a_value_error():
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant([[1], [2, 3]])


# --- tf.config and tf.device -----------------------------------------------------------------

def test_config_devices():
    cpu = tf.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
    assert tf.config.list_physical_devices() == [cpu]
    assert tf.config.list_physical_devices("CPU") == [cpu]
    assert tf.config.list_physical_devices("GPU") == []
    assert repr(tf.config.list_logical_devices()) == \
        "[LogicalDevice(name='/device:CPU:0', device_type='CPU')]"
    assert tf.config.get_visible_devices() == [cpu]
    assert tf.config.set_visible_devices([], "GPU") is None
    assert tf.config.set_visible_devices(cpu) is None
    with pytest.raises(ValueError, match="cannot be hidden"):
        tf.config.set_visible_devices([])
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    for gpu in tf.config.list_physical_devices("GPU"):     # the usual idiom: a no-op
        tf.config.experimental.set_memory_growth(gpu, True)


def test_config_keeps_tapecs_settings():
    assert tf.config.simplify_setting() in tf.config.MODES
    assert tf.config.num_threads() >= 1


def test_device_accepts_device_names():
    for name in ["/CPU:0", "cpu:0", "/device:CPU:0", "/GPU:0", "gpu:1", "", None,
                 "/job:localhost/replica:0/task:0/device:CPU:0"]:
        with tf.device(name):
            assert float(tf.constant(2.0) * 3.0) == 6.0
    with pytest.raises(ValueError, match="cannot parse the device name 'garbage'"):
        with tf.device("garbage"):
            pass
    with pytest.raises(TypeError, match="device_name must be a string"):
        with tf.device(0):
            pass


def test_run_functions_eagerly():
    seen = []

    @tf.function
    def f(x):
        seen.append(type(x).__name__)       # Python side effect: runs when f's body runs
        return x + 1.0

    assert tf.config.functions_run_eagerly() is False
    tf.config.run_functions_eagerly(True)
    try:
        assert [float(f(tf.constant(v))) for v in (1.0, 2.0)] == [2.0, 3.0]
        assert tf.config.functions_run_eagerly() is True
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == ["Tensor", "Tensor"] and f.trace_count == 0
    assert float(f(tf.constant(3.0))) + float(f(tf.constant(4.0))) == 9.0
    assert len(seen) == 3 and f.trace_count == 1      # traced once, then replayed
    with pytest.raises(TypeError, match="run_functions_eagerly: expected a bool"):
        tf.config.run_functions_eagerly(1)


# --- tf.debugging ----------------------------------------------------------------------------

X, Y = tf.constant([1.0, 2.0]), tf.constant([1.0, 3.0])


@pytest.mark.parametrize("check", [
    lambda: tf.debugging.assert_equal(X, X), lambda: tf.debugging.assert_less(X, X + 1),
    lambda: tf.debugging.assert_less_equal(X, X), lambda: tf.debugging.assert_greater(Y + 1, X),
    lambda: tf.debugging.assert_greater_equal(Y, X), lambda: tf.debugging.assert_positive(X),
    lambda: tf.debugging.assert_non_negative(X - 1), lambda: tf.debugging.assert_negative(-X),
    lambda: tf.debugging.assert_non_positive(-X), lambda: tf.debugging.assert_near(X, X + 1e-7),
    lambda: tf.debugging.assert_rank(X, 1), lambda: tf.debugging.assert_equal(1, 1),
    lambda: tf.debugging.assert_equal(tf.zeros([0]), tf.ones([0])),
    lambda: tf.debugging.assert_shapes([(X, ("N",)), (tf.zeros([2, 3]), ("N", "D"))]),
    lambda: tf.debugging.assert_shapes([(tf.zeros([4, 2, 3]), ("*", 2, "."))]),
    lambda: tf.debugging.assert_shapes({X.ref(): (2,)}),
    lambda: tf.debugging.assert_equal(tf.Variable([1, 2]), tf.constant([1, 2])),
])
def test_checks_that_hold_return_none(check):
    assert check() is None


@pytest.mark.parametrize("check, error, message", [
    (lambda: tf.debugging.assert_equal(X, Y), tf.errors.InvalidArgumentError,
     r"^Condition x == y did not hold.\nIndices of first 1 different values:\n\[\[1\]\]\n"
     r"Corresponding x values:\n\[2.\]\nCorresponding y values:\n\[3.\]\n"
     r"First 2 elements of x:\n\[1. 2.\]\nFirst 2 elements of y:\n\[1. 3.\]$"),
    (lambda: tf.debugging.assert_equal(X, Y, message="custom"),
     tf.errors.InvalidArgumentError, r"^custom\nCondition x == y"),
    (lambda: tf.debugging.assert_equal(X, tf.constant([1.0, 2.0, 3.0])),
     tf.errors.InvalidArgumentError, r"Incompatible shapes: \[2\] vs. \[3\]"),
    (lambda: tf.debugging.assert_equal(X, tf.constant([1, 2])),
     tf.errors.InvalidArgumentError, "same dtype, got float32 and int32"),
    (lambda: tf.debugging.assert_less(X, Y), tf.errors.InvalidArgumentError,
     r"^Condition x < y did not hold"),
    (lambda: tf.debugging.assert_greater(Y, X), tf.errors.InvalidArgumentError,
     r"^Condition x > y did not hold"),
    (lambda: tf.debugging.assert_positive(X - 1), tf.errors.InvalidArgumentError,
     r"^\nCondition x > 0 did not hold element-wise:\nx \(shape=\(2,\) dtype=float32\) = "
     r"\n\['0.0', '1.0'\]$"),
    (lambda: tf.debugging.assert_non_negative(X - 2), tf.errors.InvalidArgumentError,
     r"Condition x >= 0 did not hold"),
    (lambda: tf.debugging.assert_near(X, Y), tf.errors.InvalidArgumentError,
     "x and y not equal to tolerance rtol = 1.1920928955078125e-06"),
    (lambda: tf.debugging.assert_rank(X, 2), ValueError,
     r"^Tensor must have rank 2.  Received rank 1, shape \(2,\)$"),
    (lambda: tf.debugging.assert_shapes([(X, ("N",)), (tf.zeros([3, 3]), ("N", "D"))]),
     ValueError, r"^Specified by tensor shape=\(2,\) dtype=float32 dimension 0.  Tensor "
                 r"shape=\(3, 3\) dtype=float32 dimension 0 must have size 2.  Received size "
                 r"3, shape \(3, 3\)$"),
    (lambda: tf.debugging.assert_shapes([(X, (3,))]), ValueError,
     "^Specified explicitly.  Tensor shape=.* dimension 0 must have size 3"),
    (lambda: tf.debugging.assert_shapes([(X, (2, 1))]), ValueError, "must have rank 2"),
    (lambda: tf.debugging.check_numerics(tf.constant([1.0, np.nan]), "m"),
     tf.errors.InvalidArgumentError, "^m : Tensor had NaN values$"),
    (lambda: tf.debugging.check_numerics(tf.constant([np.inf, 1.0]), "m"),
     tf.errors.InvalidArgumentError, "^m : Tensor had Inf values$"),
    (lambda: tf.debugging.check_numerics(tf.constant([np.inf, np.nan], tf.float64), "m"),
     tf.errors.InvalidArgumentError, "^m : Tensor had Inf and NaN values$"),
    (lambda: tf.debugging.check_numerics(tf.constant([1, 2]), "m"),
     tf.errors.InvalidArgumentError, "floating dtype, got int32"),
    (lambda: tf.debugging.assert_all_finite(tf.constant([-np.inf]), "all"),
     tf.errors.InvalidArgumentError, "^all : Tensor had Inf values$"),
])
def test_checks_that_fail_raise_tensorflows_errors(check, error, message):
    with pytest.raises(error, match=message) as info:
        check()
    assert type(info.value) is error


def test_check_numerics_returns_its_input_and_passes_gradients():
    x = tf.constant([1.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.debugging.check_numerics(x * x, "m"))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 8.0])


def test_checks_inside_a_function_hold_at_every_call():
    @tf.function
    def f(v):
        tf.debugging.assert_positive(v, message="positive")
        return tf.debugging.check_numerics(v * 2.0, "doubled")

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(tf.constant([3.0, 2.0])).numpy(), [6.0, 4.0])
    assert f.trace_count == 1                   # the checks replay with the program
    with pytest.raises(tf.errors.InvalidArgumentError, match="^positive\nCondition x > 0"):
        f(tf.constant([-1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="^doubled : Tensor had Inf"):
        f(tf.constant([np.inf, 2.0]))
    np.testing.assert_array_equal(f(tf.constant([5.0, 1.0])).numpy(), [10.0, 2.0])


def test_checks_inside_a_gradient_function_hold_at_every_call():
    def loss(w):
        tf.debugging.assert_less(w, 10.0)
        return tf.reduce_sum(w * w)

    g = tf.grad(loss)
    np.testing.assert_allclose(g(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(g(tf.constant([3.0, 2.0])).numpy(), [6.0, 4.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Condition x < y"):
        g(tf.constant([30.0, 2.0]))


# --- tf.print --------------------------------------------------------------------------------

def test_print_writes_tensorflows_text(capsys):
    tf.print("hi", tf.constant([1, 2]), 3, output_stream=sys.stdout)
    tf.print("a", tf.constant([1, 2]), sep="|", end="!\n", output_stream=sys.stdout)
    tf.print(tf.constant(np.arange(20)), output_stream=sys.stdout)
    tf.print(tf.constant(np.arange(20)), summarize=2, output_stream=sys.stdout)
    tf.print(tf.reshape(tf.constant(np.arange(24.0)), [2, 3, 4]), summarize=1,
             output_stream=sys.stdout)
    tf.print(tf.constant(1.5), tf.constant(2.25, tf.float64), tf.constant(True),
             {"b": tf.constant([1.0]), "a": 2}, [1, tf.constant(2)], output_stream=sys.stdout)
    tf.print(tf.constant(1.0 / 3), tf.constant([1e-8, 1e9]), tf.Variable([[1.0, 2.0]]),
             tf.constant(np.zeros((2, 0))), output_stream=sys.stdout)
    assert capsys.readouterr().out == (
        "hi [1 2] 3\n"
        "a|[1 2]!\n"
        "[0 1 2 ... 17 18 19]\n"
        "[0 1 ... 18 19]\n"
        "[[[0 ... 3]\n  ...\n  [8 ... 11]]\n\n [[12 ... 15]\n  ...\n  [20 ... 23]]]\n"
        "1.5 2.25 1 {'a': 2, 'b': [1]} [1, 2]\n"
        "0.333333343 [1e-08 1e+09] [[1 2]] [\n ...]\n")


def test_print_goes_to_stderr_by_default_and_to_files(capsys, tmp_path):
    tf.print("to", tf.constant([1.5]))
    assert capsys.readouterr().err == "to [1.5]\n"
    path = tmp_path / "log.txt"
    tf.print("one", output_stream=f"file://{path}")
    tf.print("two", output_stream=f"file://{path}")
    assert path.read_text() == "one\ntwo\n"
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print("x", output_stream="nowhere")


def test_print_inside_a_function_prints_the_values_of_every_call(capsys):
    @tf.function
    def f(x):
        tf.print("x =", x)
        return x

    f(tf.constant(1.0))
    f(tf.constant(3.0))
    assert capsys.readouterr().err == "x = 1\nx = 3\n"
    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(2.0))
    finally:
        tf.config.run_functions_eagerly(False)
    assert capsys.readouterr().err == "x = 2\n"


def test_print_under_a_tape_records_nothing(capsys):
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tf.print(y)
    assert float(tape.gradient(y, x)) == 4.0 and capsys.readouterr().err == "4\n"


# --- tf.nest ---------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "y x")


def test_nest():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert tf.nest.flatten(od) == [2, 1]
    packed = tf.nest.pack_sequence_as(od, [10, 20])
    assert type(packed) is collections.OrderedDict and list(packed.items()) == \
        [("b", 20), ("a", 10)]
    structure = {"b": [1, (2, 3)], "a": None, "p": Point(6, 7)}
    assert tf.nest.flatten(structure) == [None, 1, 2, 3, 6, 7]
    assert tf.nest.pack_sequence_as(structure, list("uvwxyz")) == \
        {"b": ["v", ("w", "x")], "a": "u", "p": Point("y", "z")}
    assert tf.nest.flatten_with_tuple_paths(structure)[:2] == [(("a",), None), (("b", 0), 1)]
    assert tf.nest.map_structure(lambda a, b: a + b, {"x": 1, "y": (2, 3)},
                                 {"x": 10, "y": (20, 30)}) == {"x": 11, "y": (22, 33)}
    assert tf.nest.map_structure(lambda a, b: a + b, [1, 2], (1, 2), check_types=False) == [2, 4]
    assert tf.nest.is_nested([]) and not tf.nest.is_nested({1, 2}) and not tf.nest.is_nested("s")
    assert tf.nest.flatten(None) == [None] and tf.nest.pack_sequence_as(5, [6]) == 6
    assert tf.nest.assert_same_structure(Point(1, 2), Point(3, 4)) is None


@pytest.mark.parametrize("call, error, message", [
    (lambda: tf.nest.assert_same_structure([1], (1,)), TypeError, "same sequence type"),
    (lambda: tf.nest.assert_same_structure(Point(1, 2), (1, 2)), TypeError, "sequence type"),
    (lambda: tf.nest.assert_same_structure([1, 2], [1]), ValueError, "number of elements"),
    (lambda: tf.nest.assert_same_structure({"a": 1}, {"b": 1}), ValueError, "set of keys"),
    (lambda: tf.nest.assert_same_structure([1, 2], [1, [2]]), ValueError, "is a sequence"),
    (lambda: tf.nest.pack_sequence_as([1, [2]], [5, 6, 7]), ValueError,
     "Structure had 2 atoms, but flat_sequence had 3 items"),
    (lambda: tf.nest.pack_sequence_as(1, [5, 6]), ValueError, "The target structure"),
    (lambda: tf.nest.map_structure(lambda a: a), ValueError, "at least one structure"),
    (lambda: tf.nest.flatten({1: "a", "b": 2}), TypeError, "sortable keys"),
])
def test_nest_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- formatting, argument names, Variable's signature ----------------------------------------

def test_format_and_shape_text():
    assert f"{tf.constant(1.5):2.5f}" == "1.50000" and f"{tf.constant(3):04d}" == "0003"
    assert f"{tf.constant([1.5, 2.0])}" == "[1.5 2. ]"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{tf.constant([1.5]):.2f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{tf.Variable(1.5):.2f}"
    shape = tf.constant([[1, 2], [3, 4], [5, 6]]).shape
    assert (str(shape), repr(shape)) == ("(3, 2)", "TensorShape([3, 2])")
    assert str(tf.constant(1.0).shape) == "()" and str(shape[1:]) == "(2,)"


def test_activations_take_tensorflows_argument_names():
    x = tf.constant([[-1.0, 2.0, 0.5], [3.0, -4.0, 1.0]])
    np.testing.assert_array_equal(tf.nn.relu(features=x).numpy(), np.maximum(x.numpy(), 0))
    expected = np.logaddexp(0, x.numpy())
    for softplus in (tf.nn.softplus, tf.math.softplus):
        np.testing.assert_allclose(softplus(features=x).numpy(), expected, rtol=1e-6)
    for axis in (None, -1, 1):
        np.testing.assert_allclose(tf.nn.softmax(x, axis=axis).numpy(),
                                   tf.nn.softmax(logits=x).numpy())
        np.testing.assert_allclose(tf.nn.log_softmax(x, axis=axis).numpy(),
                                   np.log(tf.nn.softmax(x).numpy()), rtol=1e-5)
    g = tf.grad(lambda t: tf.reduce_sum(tf.nn.relu(features=t) * tf.nn.softmax(t, axis=None)))
    assert g(x).shape == x.shape


def test_variable_takes_tensorflows_positional_order():
    v = tf.Variable(1.0, False, True, None, "positional")
    assert (v.name, v.trainable) == ("positional:0", False)
    w = tf.Variable(initial_value=[1.0, 2.0], trainable=None, shape=[2], dtype=tf.float64)
    assert w.trainable and w.dtype == tf.float64 and w.shape == (2,)
    assert v.assign(2.0, False, None, False) is None
    assert float(v.assign_add(1.5, False, "add")) == 3.5
    assert float(v.assign_sub(0.5, False, "sub", True)) == 3.0
    assert tf.Variable(1.0, constraint=abs).constraint is abs


@pytest.mark.parametrize("call, message", [
    (lambda: tf.Variable(None), "initial_value` is required"),
    (lambda: tf.Variable(1.0, variable_def=object()), "variable_def"),
    (lambda: tf.Variable(1.0, shape=[2]), r"shape \(\) is not the `shape` argument \(2,\)"),
    (lambda: tf.Variable([1.0], shape=[None]), "None dimension"),
    (lambda: tf.Variable(1.0, constraint=3), "constraint must be callable"),
])
def test_variable_arguments_tapec_cannot_honour_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_name_scopes_are_per_thread():
    import threading
    scope = tf.name_scope("shared")
    seen = {}

    def run(tag):
        with tf.name_scope(tag):
            with scope as inner:
                seen[tag] = (inner, tf.Variable(1.0, name="v").name)

    threads = [threading.Thread(target=run, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": ("a/shared/", "a/shared/v:0"), "b": ("b/shared/", "b/shared/v:0")}
    with tf.name_scope("x") as x:
        pass
    assert x == "x/" and tf.Variable(1.0, name="top").name == "top:0"


def test_python_complex_numbers_are_complex128_as_tensorflow():
    # TensorFlow 2.21: tf.constant(1+2j) and tf.constant([1+2j, 3]) are complex128.
    assert tf.constant(1 + 2j).dtype == tf.complex128
    assert tf.constant([1 + 2j, 3]).dtype == tf.complex128
    assert tf.constant(1 + 2j, dtype=tf.complex64).dtype == tf.complex64


def test_softmax_is_in_math_as_in_tensorflow():
    x = tf.constant(np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]))
    assert tf.math.softmax is tf.nn.softmax and tf.math.log_softmax is tf.nn.log_softmax
    e = np.exp(x.numpy() - x.numpy().max(axis=-1, keepdims=True))
    np.testing.assert_allclose(tf.math.softmax(x).numpy(), e / e.sum(axis=-1, keepdims=True),
                               rtol=1e-15)


def test_pack_sequence_as_flat_and_nested_structures():
    """A flat list or tuple is rebuilt as its own type; nested ones, namedtuples, dicts
    and wrong lengths keep TensorFlow's rules."""
    import collections
    assert tf.nest.pack_sequence_as([None, None], (1, 2)) == [1, 2]
    assert tf.nest.pack_sequence_as((0, 0, 0), [1, 2, 3]) == (1, 2, 3)
    assert tf.nest.pack_sequence_as([0, [0, 0]], [1, 2, 3]) == [1, [2, 3]]
    assert tf.nest.pack_sequence_as({"b": 0, "a": 0}, [1, 2]) == {"b": 2, "a": 1}
    Point = collections.namedtuple("Point", "x y")
    assert tf.nest.pack_sequence_as(Point(0, 0), [1, 2]) == Point(1, 2)
    with pytest.raises(ValueError, match="Structure had 2 atoms"):
        tf.nest.pack_sequence_as([0, 0], [1, 2, 3])
