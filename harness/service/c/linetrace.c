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
 * Every event of every frame comes here (a C trace function gets them all); one of code that is
 * not the driver's costs a lookup by the code object's address.
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

/* Each code object's file key by its address (looked up at every event: a code object's own hash
 * is computed from its contents, far too slow for that).  The table holds a reference to each
 * code object, so no address is reused while it is in the table; past its size, the code not yet
 * in it is left untraced. */
#define SLOTS (1 << 16)
static struct {
    PyCodeObject *code;
    long key; /* -1: not the driver's */
} table[SLOTS];

static long key_of(PyFrameObject *frame) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    size_t slot = ((size_t)code >> 4) & (SLOTS - 1);
    for (size_t probe = 0; probe < SLOTS; probe++, slot = (slot + 1) & (SLOTS - 1)) {
        if (table[slot].code == code) {
            Py_DECREF(code);
            return table[slot].key;
        }
        if (table[slot].code == NULL)
            break;
    }
    long key = -1;
    PyObject *decided = PyDict_GetItemWithError(keys, (PyObject *)code);
    if (decided != NULL)
        Py_INCREF(decided);
    else if (!PyErr_Occurred())
        decided = PyObject_CallOneArg(decide, (PyObject *)code);
    if (decided == NULL)
        PyErr_Clear(); /* a tracer that raises would stop the driver's call: left untraced instead */
    else {
        if (decided != Py_None)
            key = (long)(PyLong_AsUnsignedLongMask(decided) & 0x7fffffffUL);
        Py_DECREF(decided);
    }
    if (table[slot].code == NULL) {
        table[slot].code = code; /* the reference PyFrame_GetCode gave is the table's */
        table[slot].key = key;
    } else
        Py_DECREF(code);
    return key;
}

static int tracer(PyObject *unused, PyFrameObject *frame, int what, PyObject *arg) {
    (void)unused;
    (void)arg;
    if (what != PyTrace_CALL && what != PyTrace_LINE && what != PyTrace_RETURN)
        return 0;
    long key = key_of(frame);
    if (key < 0)
        return 0;
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
    unsigned long edge = ((unsigned long)key ^ ((unsigned long)previous << 16) ^ (unsigned long)line) & 0x7fffffffUL;
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
