// The extern "C" entry of the SystemC model (sim/model.h): builds the
// platform on first use and turns every C++ exception into an nx_error.
//
// SystemC is process-wide state that cannot be re-elaborated, so the
// platform is one object per process, created on the first nx_sim_run and
// reused by every later one. SystemC is not re-entrant: runs from several
// threads take turns behind one mutex (the platform's), so concurrent
// callers are safe and serialised.
#include <systemc>

#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>

#include "platform.hpp" // first: gives the isa/ headers C linkage
#include "model.h"

// libsystemc.so carries a main() that calls sc_main: every executable that
// links the model must define it. The program's own main() wins; this stub
// sits in the same object as nx_sim_run so the linker always pulls it in.
// Exported from libnxsim.so (everything else there is hidden): a process
// that loads the library with RTLD_NOW (Python's ctypes) must resolve
// libsystemc.so's reference to it.
__attribute__((visibility("default"))) int sc_main(int, char **) { return 0; }

namespace {

struct ModelHolder {
    std::mutex lock;          // one run at a time, whichever thread calls
    nxsim::Platform *platform = nullptr;
    bool broken = false;      // an exception escaped SystemC: the kernel is unusable
    nx_error why{};
};

ModelHolder &holder() {
    static ModelHolder h;
    return h;
}

void build_platform(ModelHolder &h) {
    // before anything SystemC exists: no banner, femtosecond resolution
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    h.platform = new nxsim::Platform("nxsim");
}

int broken(ModelHolder &h, nx_error *err, const char *what) {
    // SystemC reports span lines ("In file: ..."): messages are one line
    char line[NX_ERROR_MAX];
    size_t n = 0;
    for (const char *c = what; *c && n + 1 < sizeof line; c++) line[n++] = *c == '\n' ? ' ' : *c;
    line[n] = '\0';
    h.broken = true;
    nx_fail(&h.why, "the SystemC model failed and cannot run again in this process: %s", line);
    return nx_fail(err, "SystemC model: %s", line);
}

} // namespace

extern "C" int nx_sim_run(const nx_machine *m, const nx_program *prog, nx_state *st,
                          const nx_sim_options *opt, nx_sim_result *out, nx_error *err) {
    return nx_sim_run_pe(m, prog, st, opt, nullptr, out, err);
}

extern "C" int nx_sim_run_pe(const nx_machine *m, const nx_program *prog, nx_state *st,
                             const nx_sim_options *opt, const nx_sim_pe_options *pe,
                             nx_sim_result *out, nx_error *err) {
    if (!m || !prog || !st || !out) return nx_fail(err, "nx_sim_run: a required argument is NULL");
    ModelHolder &h = holder();
    std::lock_guard<std::mutex> guard(h.lock);
    if (h.broken) {
        if (err) *err = h.why;
        return -1;
    }
    try {
        if (!h.platform) build_platform(h);
        return h.platform->run(m, prog, st, opt, pe, out, err);
    } catch (const sc_core::sc_report &r) {
        return broken(h, err, r.what());
    } catch (const std::bad_alloc &) {
        return broken(h, err, "out of memory");
    } catch (const std::exception &e) {
        return broken(h, err, e.what());
    } catch (...) {
        return broken(h, err, "unknown C++ exception");
    }
}

extern "C" void nx_sim_result_free(nx_sim_result *r) {
    if (!r) return;
    std::free(r->log);
    std::free(r->dma_queue_bytes);
    std::free(r->dma_queue_transfers);
    r->log = nullptr;
    r->log_count = 0;
    r->dma_queue_bytes = r->dma_queue_transfers = nullptr;
    r->dma_queues = 0;
}
