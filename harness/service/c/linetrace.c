/* The driver service's line tracer, in C: what harness.service.coverage's Python tracer does,
 * without a call into Python for every line the driver runs.
 *
 * A Python trace function costs about a microsecond a line; the reference driver runs thousands
 * of lines an example, and traced that way a fuzz loop ran a third fewer examples.  Here each
 * event is a dictionary lookup and, for a line of the driver's own code, one insertion.
 *
 *   start(keys, decide, reached)   trace this thread from now on
 *
 * keys:    dict, code object -> int file key, or None for code that is not the driver's
 * decide:  callable(code) -> that value, for a code object not in keys yet (stored there)
 * reached: dict, edge -> None; an edge is (key ^ (previous line << 16) ^ line) & 0x7fffffff, the
 *          previous line that of the same frame (0 at its first line), as the Python tracer has it
 *
 * A frame of code that is not the driver's stops getting line events (f_trace_lines), so the
 * interpreter calls the tracer only at its calls and returns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#define DEPTH 512

static PyObject *keys, *decide, *reached;

/* Per thread: the traced frames being run, innermost last, with the last line each ran. */
static _Thread_local struct {
    PyFrameObject *frame;
    int previous;
} stack[DEPTH];
static _Thread_local int depth;

/* The file key of the frame's code (borrowed; Py_None when not the driver's), NULL on error. */
static PyObject *key_of(PyFrameObject *frame) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *key = PyDict_GetItemWithError(keys, (PyObject *)code);
    if (key == NULL && !PyErr_Occurred()) {
        PyObject *decided = PyObject_CallOneArg(decide, (PyObject *)code);
        if (decided != NULL) {
            if (PyDict_SetItem(keys, (PyObject *)code, decided) == 0)
                key = PyDict_GetItemWithError(keys, (PyObject *)code);
            Py_DECREF(decided);
        }
    }
    Py_DECREF(code);
    return key;
}

static int tracer(PyObject *unused, PyFrameObject *frame, int what, PyObject *arg) {
    (void)unused;
    (void)arg;
    if (what != PyTrace_CALL && what != PyTrace_LINE && what != PyTrace_RETURN)
        return 0;
    PyObject *key = key_of(frame);
    if (key == NULL) {
        PyErr_Clear(); /* a tracer that raises would stop the driver's call: the edge is lost instead */
        return 0;
    }
    if (key == Py_None) {
        if (what == PyTrace_CALL && PyObject_SetAttrString((PyObject *)frame, "f_trace_lines", Py_False) < 0)
            PyErr_Clear();
        return 0;
    }
    if (what == PyTrace_CALL) {
        if (depth < DEPTH) {
            stack[depth].frame = frame;
            stack[depth].previous = 0;
        }
        depth++;
        return 0;
    }
    if (what == PyTrace_RETURN) {
        if (depth > 0)
            depth--;
        return 0;
    }
    int line = PyFrame_GetLineNumber(frame);
    int previous = 0;
    if (depth > 0 && depth <= DEPTH && stack[depth - 1].frame == frame) {
        previous = stack[depth - 1].previous;
        stack[depth - 1].previous = line;
    }
    unsigned long edge = ((unsigned long)PyLong_AsUnsignedLongMask(key) ^ ((unsigned long)previous << 16) ^ (unsigned long)line)
                         & 0x7fffffffUL;
    PyObject *number = PyLong_FromUnsignedLong(edge);
    if (number == NULL || PyDict_SetItem(reached, number, Py_None) < 0)
        PyErr_Clear();
    Py_XDECREF(number);
    return 0;
}

static PyObject *start(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *new_keys, *new_decide, *new_reached;
    if (!PyArg_ParseTuple(args, "O!OO!", &PyDict_Type, &new_keys, &new_decide, &PyDict_Type, &new_reached))
        return NULL;
    if (keys == NULL) { /* once per process: every thread shares them */
        Py_INCREF(new_keys);
        Py_INCREF(new_decide);
        Py_INCREF(new_reached);
        keys = new_keys;
        decide = new_decide;
        reached = new_reached;
    }
    depth = 0;
    PyEval_SetTrace(tracer, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"start", start, METH_VARARGS, "Trace this thread's frames of the driver's code from now on."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "harness_linetrace", NULL, -1, methods};

PyMODINIT_FUNC PyInit_harness_linetrace(void) { return PyModule_Create(&definition); }
