/*
 * A stand-in for the NVIDIA driver's libnvidia-ml.so.1, for tests on machines without GPUs.
 *
 * The real nvidia-ml-py bindings (module pynvml) load it unchanged, so dsv4-launch's NVML code
 * runs exactly as on a GPU host; only the driver's answers are made up. What it reports comes
 * from environment variables, read at every nvmlInitWithFlags():
 *
 *   FAKE_NVML_INIT    NVML return code of nvmlInit (0 = success; 9 = driver not loaded, ...)
 *   FAKE_NVML_GPUS    GPUs separated by ';', each  name|uuid|major.minor|memMiB|handleErr|ccErr|migs
 *                     handleErr: code of nvmlDeviceGetHandleByIndex (4 = no permission, 15 = lost)
 *                     ccErr: code of nvmlDeviceGetCudaComputeCapability (13 = function not found)
 *                     migs: MIG device UUIDs separated by '+'; empty fields mean the defaults
 *   FAKE_NVML_DRIVER  driver version string (default 550.54.15)
 *   FAKE_NVML_LOG     a file to which "init" and "shutdown" are appended, so tests can prove
 *                     that NVML was shut down before vLLM started
 *
 * Build: cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16
#define MAX_MIGS 7

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

typedef struct {
    char name[96];
    char uuid[96];
    int major, minor;
    unsigned long long mem_mib;
    int handle_err, cc_err;
    int n_migs;
    char migs[MAX_MIGS][96];
} gpu_t;

static gpu_t gpus[MAX_GPUS];
static int n_gpus = 0;
static int initialised = 0;

static void log_event(const char *what) {
    const char *path = getenv("FAKE_NVML_LOG");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s\n", what);
    fclose(f);
}

/* Split s at the first occurrence of sep; returns the rest (or NULL) and terminates s. */
static char *cut(char *s, char sep) {
    char *p = s ? strchr(s, sep) : NULL;
    if (!p) return NULL;
    *p = '\0';
    return p + 1;
}

static void load_gpus(void) {
    n_gpus = 0;
    const char *spec = getenv("FAKE_NVML_GPUS");
    if (!spec) return;
    char *copy = strdup(spec), *entry = copy;
    while (entry && *entry && n_gpus < MAX_GPUS) {
        char *next = cut(entry, ';');
        gpu_t *g = &gpus[n_gpus++];
        memset(g, 0, sizeof *g);
        char *f[7] = {entry};
        for (int i = 1; i < 7; i++) f[i] = cut(f[i - 1], '|');
        snprintf(g->name, sizeof g->name, "%s", f[0] ? f[0] : "");
        snprintf(g->uuid, sizeof g->uuid, "%s", f[1] ? f[1] : "");
        if (f[2] && *f[2]) sscanf(f[2], "%d.%d", &g->major, &g->minor);
        if (f[3] && *f[3]) g->mem_mib = strtoull(f[3], NULL, 10);
        if (f[4] && *f[4]) g->handle_err = atoi(f[4]);
        if (f[5] && *f[5]) g->cc_err = atoi(f[5]);
        for (char *m = f[6]; m && *m && g->n_migs < MAX_MIGS;) {
            char *rest = cut(m, '+');
            snprintf(g->migs[g->n_migs++], 96, "%s", m);
            m = rest;
        }
        entry = next;
    }
    free(copy);
}

/* Handles: GPU i is (void*)(i + 1); its MIG slot j is (void*)(1000 * (i + 1) + j). */
static gpu_t *gpu_of(void *handle) {
    long h = (long)handle;
    if (h >= 1 && h <= n_gpus) return &gpus[h - 1];
    return NULL;
}

static int copy_str(char *dst, unsigned int len, const char *src) {
    if (strlen(src) + 1 > len) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    strcpy(dst, src);
    return 0;
}

int nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    const char *code = getenv("FAKE_NVML_INIT");
    int rc = code ? atoi(code) : 0;
    if (rc) return rc;
    load_gpus();
    initialised++;
    log_event("init");
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlInit(void) { return nvmlInitWithFlags(0); }

int nvmlShutdown(void) {
    if (!initialised) return 1; /* NVML_ERROR_UNINITIALIZED */
    initialised--;
    log_event("shutdown");
    return 0;
}

const char *nvmlErrorString(int rc) {
    switch (rc) {
    case 0: return "Success";
    case 4: return "Insufficient Permissions";
    case 9: return "Driver Not Loaded";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    default: return "Unknown Error";
    }
}

int nvmlSystemGetDriverVersion(char *version, unsigned int len) {
    const char *v = getenv("FAKE_NVML_DRIVER");
    return copy_str(version, len, v && *v ? v : "550.54.15");
}

int nvmlSystemGetCudaDriverVersion(int *version) { *version = 12040; return 0; }
int nvmlSystemGetCudaDriverVersion_v2(int *version) { *version = 12040; return 0; }

int nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return 1;
    *count = (unsigned int)n_gpus;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    if (!initialised) return 1;
    if (index >= (unsigned int)n_gpus) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    if (gpus[index].handle_err) return gpus[index].handle_err;
    *device = (void *)(long)(index + 1);
    return 0;
}

int nvmlDeviceGetName(void *device, char *name, unsigned int len) {
    gpu_t *g = gpu_of(device);
    return g ? copy_str(name, len, g->name) : 2;
}

int nvmlDeviceGetUUID(void *device, char *uuid, unsigned int len) {
    long h = (long)device;
    if (h >= 1000) { /* a MIG handle */
        gpu_t *g = gpu_of((void *)(h / 1000));
        int slot = (int)(h % 1000);
        return g && slot < g->n_migs ? copy_str(uuid, len, g->migs[slot]) : 2;
    }
    gpu_t *g = gpu_of(device);
    return g ? copy_str(uuid, len, g->uuid) : 2;
}

int nvmlDeviceGetCudaComputeCapability(void *device, int *major, int *minor) {
    gpu_t *g = gpu_of(device);
    if (!g) return 2;
    if (g->cc_err) return g->cc_err;
    *major = g->major;
    *minor = g->minor;
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *memory) {
    gpu_t *g = gpu_of(device);
    if (!g) return 2;
    memory->total = g->mem_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return 0;
}

int nvmlDeviceGetMaxMigDeviceCount(void *device, unsigned int *count) {
    gpu_t *g = gpu_of(device);
    if (!g) return 2;
    if (!g->n_migs) return 3; /* NVML_ERROR_NOT_SUPPORTED */
    *count = MAX_MIGS;
    return 0;
}

int nvmlDeviceGetMigDeviceHandleByIndex(void *device, unsigned int index, void **mig) {
    gpu_t *g = gpu_of(device);
    if (!g) return 2;
    if (index >= (unsigned int)g->n_migs) return 6; /* NVML_ERROR_NOT_FOUND */
    *mig = (void *)(1000L * (long)device + index);
    return 0;
}
