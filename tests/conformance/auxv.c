/* ELF auxiliary vector conformance. */
#include "conformance.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#ifndef AT_EXECFN
#define AT_EXECFN 31
#endif
#ifndef AT_SYSINFO_EHDR
#define AT_SYSINFO_EHDR 33
#endif
#ifndef AT_RANDOM
#define AT_RANDOM 25
#endif

extern char **environ;
extern char _start[];
/* Defined by the linker: the ELF header of the main executable. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((weak));

struct main_obj {
    int found;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;
    ElfW(Addr) addr;
};

static int first_obj_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct main_obj *m = data;
    if (!m->found) {
        m->found = 1;
        m->phdr = info->dlpi_phdr;
        m->phnum = info->dlpi_phnum;
        m->addr = info->dlpi_addr;
    }
    return 1;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The raw auxv follows envp's NULL on the initial stack. */
static ElfW(auxv_t) *raw_auxv(void)
{
    char **e = environ;
    while (*e)
        e++;
    return (ElfW(auxv_t) *)(e + 1);
}

int main(int argc, char **argv)
{
    (void)argc;
    conf_init();

    unsigned long pagesz = getauxval(AT_PAGESZ);
    checkf("at_pagesz", pagesz == 4096, "got %lu", pagesz);
    check("at_pagesz_sysconf", (long)pagesz == sysconf(_SC_PAGESIZE));

    /* AT_PHDR / AT_PHNUM vs __ehdr_start and dl_iterate_phdr. */
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    unsigned long phnum = getauxval(AT_PHNUM);
    unsigned long phent = getauxval(AT_PHENT);
    check("at_phent", phent == sizeof(ElfW(Phdr)));
    check("at_phdr_nonzero", phdr != NULL && phnum > 0);
    if (&__ehdr_start) {
        const ElfW(Ehdr) *eh = &__ehdr_start;
        check("ehdr_start_magic", memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0);
        checkf("at_phdr_matches_ehdr",
               (const char *)phdr == (const char *)eh + eh->e_phoff,
               "phdr=%p ehdr=%p phoff=%lu", (void *)phdr, (void *)eh,
               (unsigned long)eh->e_phoff);
        checkf("at_phnum_matches_ehdr", phnum == eh->e_phnum, "%lu vs %u",
               phnum, eh->e_phnum);
        show("elf_type", "%s", eh->e_type == ET_DYN ? "ET_DYN" :
                               eh->e_type == ET_EXEC ? "ET_EXEC" : "other");
    } else {
        check("ehdr_start_available", 0);
    }
    struct main_obj m = {0};
    dl_iterate_phdr(first_obj_cb, &m);
    check("dl_iterate_phdr_main_found", m.found);
    checkf("at_phdr_matches_dl_iterate_phdr", m.phdr == phdr && m.phnum == phnum,
           "dl=%p/%u aux=%p/%lu", (void *)m.phdr, m.phnum, (void *)phdr, phnum);

    /* Load bias computed from PT_PHDR must match dlpi_addr. */
    int has_interp = 0, has_pt_phdr = 0;
    ElfW(Addr) bias = 0;
    for (unsigned long i = 0; i < phnum; i++) {
        if (phdr[i].p_type == PT_INTERP)
            has_interp = 1;
        if (phdr[i].p_type == PT_PHDR) {
            has_pt_phdr = 1;
            bias = (ElfW(Addr))phdr - phdr[i].p_vaddr;
        }
    }
    if (has_pt_phdr)
        checkf("load_bias_matches", bias == m.addr, "bias=%lx dlpi_addr=%lx",
               (unsigned long)bias, (unsigned long)m.addr);
    else
        check("load_bias_matches", 1);

    /* AT_ENTRY is _start. */
    checkf("at_entry_is_start", getauxval(AT_ENTRY) == (unsigned long)_start,
           "entry=%lx _start=%p", getauxval(AT_ENTRY), (void *)_start);

    /* AT_RANDOM: 16 readable bytes, not all zero. */
    const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
    int nonzero = 0;
    if (rnd)
        for (int i = 0; i < 16; i++)
            nonzero |= rnd[i];
    check("at_random_readable", rnd != NULL && nonzero);

    /* AT_EXECFN ends with our basename. */
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    checkf("at_execfn_basename",
           execfn && strcmp(base_name(execfn), base_name(argv[0])) == 0,
           "execfn=%s argv0=%s", execfn ? execfn : "(null)", argv[0]);
    checkf("at_execfn_equals_argv0", execfn && strcmp(execfn, argv[0]) == 0,
           "execfn=%s argv0=%s", execfn ? execfn : "(null)", argv[0]);

    /* vDSO. */
    const unsigned char *vdso = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    check("at_sysinfo_ehdr_nonzero", vdso != NULL);
    check("at_sysinfo_ehdr_elf_magic", vdso && memcmp(vdso, "\x7f" "ELF", 4) == 0);
    if (vdso) {
        const ElfW(Ehdr) *veh = (const ElfW(Ehdr) *)vdso;
        check("vdso_is_elf64_dyn", veh->e_ident[EI_CLASS] == ELFCLASS64 &&
                                       veh->e_type == ET_DYN);
    }

    check("at_secure_zero", getauxval(AT_SECURE) == 0);
    check("at_hwcap_nonzero", getauxval(AT_HWCAP) != 0);
    check("at_uid", getauxval(AT_UID) == (unsigned long)getuid());
    check("at_euid", getauxval(AT_EUID) == (unsigned long)geteuid());
    check("at_gid", getauxval(AT_GID) == (unsigned long)getgid());
    check("at_egid", getauxval(AT_EGID) == (unsigned long)getegid());
    show("at_clktck", "%lu", getauxval(AT_CLKTCK));
    const char *plat = (const char *)getauxval(AT_PLATFORM);
    show("at_platform", "%s", plat ? plat : "(null)");

    /* AT_BASE: the interpreter's base; 0 without PT_INTERP. */
    unsigned long at_base = getauxval(AT_BASE);
    show("link", "%s", has_interp ? "dynamic" : "static");
    checkf("at_base_consistent", has_interp ? at_base != 0 : at_base == 0,
           "interp=%d base=%lx", has_interp, at_base);

    /* Unknown type: 0 and ENOENT. */
    errno = 0;
    unsigned long unk = getauxval(0x7fff);
    check("getauxval_unknown_enoent", unk == 0 && errno == ENOENT);

    /* Raw auxv on the stack agrees with getauxval and ends with AT_NULL. */
    ElfW(auxv_t) *av = raw_auxv();
    int n = 0, agree = 1, seen_pagesz = 0, seen_entry = 0;
    unsigned long raw_hwcap = 0;
    for (; av->a_type != AT_NULL && n < 256; av++, n++) {
        unsigned long t = av->a_type;
        /* glibc's getauxval(AT_HWCAP) returns its own x86 feature word,
         * so compare the raw entry only for being non-zero. */
        if (t == AT_HWCAP)
            raw_hwcap = av->a_un.a_val;
        if (t == AT_PAGESZ)
            seen_pagesz = 1;
        if (t == AT_ENTRY)
            seen_entry = 1;
        if (t == AT_PAGESZ || t == AT_PHDR || t == AT_PHNUM || t == AT_ENTRY ||
            t == AT_RANDOM || t == AT_EXECFN || t == AT_SYSINFO_EHDR ||
            t == AT_BASE || t == AT_UID) {
            if (getauxval(t) != av->a_un.a_val) {
                fprintf(stderr, "auxv type %lu: raw %lx getauxval %lx\n", t,
                        (unsigned long)av->a_un.a_val, getauxval(t));
                agree = 0;
            }
        }
    }
    check("raw_auxv_terminated", av->a_type == AT_NULL);
    check("raw_auxv_has_pagesz_entry", seen_pagesz && seen_entry);
    check("raw_auxv_agrees", agree);
    check("raw_auxv_hwcap_nonzero", raw_hwcap != 0);

    return conf_finish("auxv");
}
