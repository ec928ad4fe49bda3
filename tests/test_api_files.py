"""The Python API's inputs= and outputs=: NumPy arrays in place of the files a program's load
reads and its save writes (goat.interp.npyio.MemoryFiles)."""

import os

import numpy as np
import pytest

import goat

TRAIN = '''
var w: tensor[3x1] = load("w0.npy")
for step in 0..40 {
    let x: tensor[4x3] = load("data/x_{step % 2}.npy")
    let y: tensor[4x1] = load("data/y_{step % 2}.npy")
    w -= transpose(x) @ (x @ w - y) * 0.05
    if step % 20 == 19 {
        save(w, "ckpt/w_{step}.npy")
    }
}
save(w, "w.npy")
print col_sum(row_sum(w))
'''


def _data():
    rng = np.random.default_rng(7)
    xs = [rng.normal(size=(4, 3)) for _ in range(2)]
    ys = [x @ np.array([[1.0], [-2.0], [0.5]]) for x in xs]
    files = {"w0.npy": np.zeros((3, 1))}
    for i in range(2):
        files["data/x_%d.npy" % i] = xs[i]
        files["data/y_%d.npy" % i] = ys[i]
    return files, xs, ys


def _reference(xs, ys, steps=40):
    """The same descent, written in NumPy."""
    w = np.zeros((3, 1))
    kept = {}
    for step in range(steps):
        x, y = xs[step % 2], ys[step % 2]
        w = w - x.T @ (x @ w - y) * 0.05
        if step % 20 == 19:
            kept["ckpt/w_%d.npy" % step] = w.copy()
    kept["w.npy"] = w
    return kept


def test_a_training_loop_reads_its_data_from_inputs_and_saves_into_outputs(tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    files, xs, ys = _data()
    outputs = {}
    printed = goat.run_source(TRAIN, inputs=files, outputs=outputs)
    want = _reference(xs, ys)
    assert sorted(outputs) == sorted(want)
    for name, w in want.items():
        np.testing.assert_allclose(outputs[name], w, rtol=1e-13, atol=1e-15)
        assert outputs[name].dtype == np.float64
    np.testing.assert_allclose(printed[0], [[want["w.npy"].sum()]], rtol=1e-13)
    assert os.listdir(tmp_path) == []           # nothing was written to the disk


def test_the_same_program_reads_and_writes_files_without_them(tmp_path):
    files, xs, ys = _data()
    for name, a in files.items():
        os.makedirs(os.path.dirname(tmp_path / name), exist_ok=True)
        np.save(tmp_path / name, a)
    os.makedirs(tmp_path / "ckpt")
    (tmp_path / "t.mg").write_text(TRAIN)
    goat.run_file(str(tmp_path / "t.mg"))
    outputs = {}
    # the keys are relative to the program's folder, as its own names are
    goat.run_file(str(tmp_path / "t.mg"), inputs=files, outputs=outputs)
    for name, a in outputs.items():
        assert np.array_equal(np.load(tmp_path / name), a)


def test_a_load_not_in_inputs_reads_the_file_and_saves_go_to_disk_without_outputs(tmp_path):
    np.save(tmp_path / "b.npy", np.array([[10.0, 20.0]]))
    (tmp_path / "p.mg").write_text('let a: tensor[1x2] = load("a.npy")\n'
                                   'let b: tensor[1x2] = load("b.npy")\n'
                                   'save(a + b, "c.npy")\nprint a + b\n')
    absolute = str(tmp_path / "a.npy")             # an absolute key names the same file
    got = goat.run_file(str(tmp_path / "p.mg"), inputs={absolute: [[1, 2]]})
    assert got[0].tolist() == [[11.0, 22.0]]
    assert np.load(tmp_path / "c.npy").tolist() == [[11.0, 22.0]]
    assert not (tmp_path / "a.npy").exists()


def test_float32_runs_take_and_give_float32():
    outputs = {}
    got = goat.run_source('let a: tensor[2] = load("a.npy")\nsave(a * 3, "b.npy")\nprint a\n',
                          inputs={"a.npy": np.array([0.1, 1 / 3])}, outputs=outputs,
                          dtype="f32")
    assert got[0].dtype == np.float32 and outputs["b.npy"].dtype == np.float32
    np.testing.assert_array_equal(outputs["b.npy"],
                                  np.array([0.1, 1 / 3], np.float32) * np.float32(3))


def test_an_output_is_a_copy_of_the_value_then():
    outputs = {}
    goat.run_source('var w = [[1.0]]\nfor i in 0..3 {\n    w = w * 2\n    save(w, "w.npy")\n'
                    '    save(w, "w_{i}.npy")\n}\n', outputs=outputs)
    assert {k: v.item() for k, v in outputs.items()} == {
        "w.npy": 8.0, "w_0.npy": 2.0, "w_1.npy": 4.0, "w_2.npy": 8.0}


@pytest.mark.parametrize("given, message", [
    (np.zeros(3), "a.npy (in inputs) holds an array of shape 3, but tensor[3x1] was declared"),
    (np.zeros((3, 1), complex), "a.npy (in inputs) holds complex numbers (complex128); goat "
                                "reads float16, float32 or float64, signed or unsigned "
                                "integers, or bool"),
    (np.array([[1], [2], [2 ** 53 + 1]]), "a.npy (in inputs) holds the integer 9007199254740993, which "
                                          "float64 cannot hold exactly (it would round to "
                                          "9007199254740992); goat's values are float64"),
    (np.array([[None], [1], [2]], dtype=object), "cannot load a.npy: the array given for it in "
                                                 "inputs holds Python objects; goat reads "
                                                 "numbers and booleans"),
    (None, "cannot load a.npy: the value given for it in inputs is NoneType, not a NumPy "
           "array (numpy.ndarray)"),
    (np.ma.masked_array([[1.0], [2], [3]], mask=[[0], [1], [0]]),
     "cannot load a.npy: the value given for it in inputs is numpy.MaskedArray, not a NumPy "
     "array (numpy.ndarray)"),
    ([[1], [2, 3], [4]], "cannot load a.npy: the value given for it in inputs is not an array "
                         "of numbers"),
])
def test_an_input_is_read_by_a_files_rules(given, message):
    with pytest.raises(goat.GoatError) as info:
        goat.run_source('print 1\nlet a: tensor[3x1] = load("a.npy")\nprint a\n', path="p.mg",
                        inputs={"a.npy": given})
    e = info.value
    assert e.line == 2 and message in e.message
    assert [v.tolist() for v in e.printed] == [1.0]
    # booleans and integers are numbers, exactly
    got = goat.run_source('print load("a.npy", tensor[3x1])\n',
                          inputs={"a.npy": np.array([[True], [False], [True]])})
    assert got[0].tolist() == [[1.0], [0.0], [1.0]]


@pytest.mark.parametrize("kwargs, error, text", [
    ({"inputs": [("a.npy", 1)]}, TypeError, "inputs must be a dict of file names to arrays"),
    ({"inputs": {3: np.zeros(1)}}, TypeError, "inputs' keys must be file names (str)"),
    ({"outputs": []}, TypeError, "outputs must be a dict, which each save fills"),
])
def test_wrong_inputs_and_outputs_are_refused_before_anything_runs(kwargs, error, text,
                                                                   tmp_path):
    (tmp_path / "p.mg").write_text('save([[1.0]], "x.npy")\n')
    for call in (lambda: goat.run_source('save([[1.0]], "x.npy")\n', **kwargs),
                 lambda: goat.run_file(str(tmp_path / "p.mg"), **kwargs),
                 lambda: goat.execute(goat.check_source("print 1\n"), **kwargs)):
        with pytest.raises(error) as info:
            call()
        assert text in str(info.value)
    assert not (tmp_path / "x.npy").exists()


def test_a_file_saved_into_outputs_is_what_a_later_load_of_it_reads(tmp_path, monkeypatch):
    """The load had read the disk: no such file, or silently an older file's contents."""
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "ck.npy", np.array([[7.0, 7.0]]))           # an older checkpoint
    outputs = {}
    got = goat.run_source('var w = [[1.0, 2]]\nfor i in 0..3 {\n    save(w * i, "./ck.npy")\n'
                          '    w = load("ck.npy", tensor[1x2]) + 1\n}\nprint w\n',
                          outputs=outputs)
    # w: [1, 2] -> 0 + 1 -> 1 * 1 + 1 -> 2 * 2 + 1
    assert got[0].tolist() == [[5.0, 5.0]] and list(outputs) == ["ck.npy"]
    assert outputs["ck.npy"].tolist() == [[4.0, 4.0]]
    assert np.load(tmp_path / "ck.npy").tolist() == [[7.0, 7.0]]     # the disk untouched


def test_inputs_are_keyed_by_the_name_as_written_in_a_module_too(tmp_path, monkeypatch):
    """A module in another folder loads "w.npy": the key "w.npy" gives it (keys had been
    resolved from the main program's folder only)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "lib" / "wmod.mg").write_text('let w: tensor[2] = load("w.npy")\n')
    (tmp_path / "proj" / "m.mg").write_text('import wmod\nlet v: tensor[2] = load("./v.npy")\n'
                                            'print wmod.w + v\n')
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "lib"))
    got = goat.run_file(str(tmp_path / "proj" / "m.mg"),
                        inputs={"w.npy": np.array([1.0, 2.0]), "v.npy": np.array([10, 20])})
    assert got[0].tolist() == [11.0, 22.0]


def test_a_load_that_falls_back_to_a_missing_file_names_the_inputs_keys(tmp_path):
    """A misspelled key had been ignored: the load read the disk and said only "no such
    file"."""
    def message(inputs):
        with pytest.raises(goat.GoatError) as info:
            goat.run_source('print load("data/x0.npy", tensor[2])\n',
                            path=str(tmp_path / "p.mg"), inputs=inputs)
        return info.value.message
    assert message({"data/x_0.npy": np.zeros(2)}) == (
        "cannot load data/x0.npy: no such directory 'data' (inputs= has no 'data/x0.npy'; did "
        "you mean 'data/x_0.npy'?)")
    assert message({"a.npy": np.zeros(2), "b.npy": np.zeros(2)}) == (
        "cannot load data/x0.npy: no such directory 'data' (inputs= has no 'data/x0.npy': its "
        "keys are 'a.npy', 'b.npy')")
    # without inputs, the message is the file's alone
    assert message(None) == "cannot load data/x0.npy: no such directory 'data'"


def test_a_load_after_a_save_to_the_disk_reads_what_was_saved(tmp_path):
    """Found by a breaker: with inputs= and no outputs=, a save wrote x.npy to the disk but a
    later load of x.npy in the same run read the inputs' array, where goat run reads the new
    file."""
    path = str(tmp_path / "p.mg")
    text = ('let x = load("x.npy", tensor[2x2])\nsave(x * 5, "x.npy")\n'
            'let y = load("x.npy", tensor[2x2])\nprint y\n')
    (y,) = goat.run_source(text, path=path, inputs={"x.npy": np.eye(2)})
    assert y.tolist() == [[5.0, 0.0], [0.0, 5.0]]
    assert np.load(tmp_path / "x.npy").tolist() == [[5.0, 0.0], [0.0, 5.0]]
    # a load before the save still reads the given array
    (x,) = goat.run_source('print load("x.npy", tensor[2x2])\n', path=path,
                           inputs={"x.npy": np.eye(2) * 3})
    assert x.tolist() == [[3.0, 0.0], [0.0, 3.0]]


def test_an_input_may_be_what_numpy_reads_as_an_array_such_as_a_pytorch_tensor(tmp_path):
    """A newcomer's: a torch.Tensor in inputs= was refused ("not a NumPy array"); what NumPy
    reads through its array protocol is read as the file would be, and what it cannot read
    says why (a tensor that requires grad)."""
    torch = pytest.importorskip("torch")
    src = 'let a: tensor[2] = load("x.npy")\nprint a * 2\n'
    (got,) = goat.run_source(src, path=str(tmp_path / "p.mg"),
                             inputs={"x.npy": torch.tensor([1.0, 2.5], dtype=torch.float64)})
    assert got.tolist() == [2.0, 5.0]
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src, path=str(tmp_path / "p.mg"),
                        inputs={"x.npy": torch.tensor([1.0, 2.0], requires_grad=True)})
    assert info.value.message.startswith("cannot load x.npy: the value given for it in inputs "
                                         "is not an array of numbers (Can't call numpy()")
