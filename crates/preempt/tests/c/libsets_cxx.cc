// Libsets with C++ (tests/libsets.rs builds this with g++): exceptions
// thrown by the function's own copy of libstdc++ and unwound by its own copy
// of libgcc_s, std::string and iostreams, while preempted every 20 µs and
// while the caller throws and catches too.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "preempt.h"

struct Work {
    volatile bool stop = false;
    long caught = 0, rounds = 0, bad = 0;
};

static void fn(void *p) {
    Work *w = static_cast<Work *>(p);
    std::vector<int> v(3);
    while (!w->stop) {
        try {
            v.at(5 + w->rounds % 7);  // thrown inside the copy of libstdc++
            w->bad++;
        } catch (const std::out_of_range &) {
            w->caught++;
        }
        try {
            throw std::runtime_error("round " + std::to_string(w->rounds));
        } catch (const std::exception &e) {
            if (std::string(e.what()) != "round " + std::to_string(w->rounds))
                w->bad++;
            w->caught++;
        }
        std::ostringstream os;
        os << "r" << w->rounds << ":" << 3.5;
        if (os.str() != "r" + std::to_string(w->rounds) + ":3.5")
            w->bad++;
        w->rounds++;
    }
    std::cout << "function: " << w->rounds << " rounds" << std::endl;
}

int main() {
    if (preempt_libsets_enable(nullptr) != 0) {
        std::fprintf(stderr, "enable: %s\n", preempt_libsets_error());
        return 1;
    }
    Work w;
    preempt_cont_t *c;
    long slices = 0, mine = 0;
    int r = preempt_launch(fn, &w, 20, &c);
    while (r == PREEMPT_TIMEOUT) {
        try {
            throw std::logic_error("caller");
        } catch (const std::logic_error &) {
            mine++;
        }
        if (++slices == 20000)
            w.stop = true;
        r = preempt_resume(&c, w.stop ? PREEMPT_NO_TIMEOUT : 20);
    }
    std::cout << "caller: " << slices << " slices, " << mine << " caught; function: "
              << w.caught << " caught, " << w.bad << " wrong" << std::endl;
    if (r != PREEMPT_DONE || w.bad != 0 || w.caught != 2 * w.rounds || mine != slices || w.rounds == 0)
        return 1;
    std::cout << "all ok" << std::endl;
    return 0;
}
