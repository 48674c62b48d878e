//! What the library copies need to know about a loaded ELF object, read from
//! its own dynamic section in memory (as the dynamic loader left it), and
//! symbol lookup with GNU hash tables and symbol versions.
//!
//! Hand-written rather than the `object` crate: everything here is read from
//! mapped memory at addresses the dynamic section gives (not from a file),
//! and the handful of record layouts below is all that is needed.

use core::ffi::CStr;

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_DYNAMIC: u32 = 2;
pub(crate) const PT_TLS: u32 = 7;
pub(crate) const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
pub(crate) const PT_GNU_RELRO: u32 = 0x6474_e552;
pub(crate) const PF_X: u32 = 1;
pub(crate) const PF_W: u32 = 2;
pub(crate) const PF_R: u32 = 4;

const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_HASH: i64 = 4;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_INIT: i64 = 12;
const DT_TEXTREL: i64 = 22;
const DT_JMPREL: i64 = 23;
const DT_INIT_ARRAY: i64 = 25;
const DT_INIT_ARRAYSZ: i64 = 27;
const DT_FLAGS: i64 = 30;
const DT_RELRSZ: i64 = 35;
const DT_RELR: i64 = 36;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
const DT_VERSYM: i64 = 0x6fff_fff0;
const DT_VERDEF: i64 = 0x6fff_fffc;
const DT_VERNEED: i64 = 0x6fff_fffe;
const DF_TEXTREL: u64 = 4;

pub(crate) const STT_FUNC: u8 = 2;
pub(crate) const STT_TLS: u8 = 6;
pub(crate) const STT_GNU_IFUNC: u8 = 10;
const STB_LOCAL: u8 = 0;
const SHN_UNDEF: u16 = 0;

pub(crate) const R_NONE: u32 = 0;
pub(crate) const R_64: u32 = 1;
pub(crate) const R_COPY: u32 = 5;
pub(crate) const R_GLOB_DAT: u32 = 6;
pub(crate) const R_JUMP_SLOT: u32 = 7;
pub(crate) const R_RELATIVE: u32 = 8;
pub(crate) const R_DTPMOD64: u32 = 16;
pub(crate) const R_DTPOFF64: u32 = 17;
pub(crate) const R_TPOFF64: u32 = 18;
pub(crate) const R_IRELATIVE: u32 = 37;

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Phdr {
    pub p_type: u32,
    pub p_flags: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_paddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
    pub p_align: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Sym {
    pub st_name: u32,
    pub st_info: u8,
    pub st_other: u8,
    pub st_shndx: u16,
    pub st_value: u64,
    pub st_size: u64,
}

impl Sym {
    pub(crate) fn kind(&self) -> u8 {
        self.st_info & 0xf
    }
    fn bind(&self) -> u8 {
        self.st_info >> 4
    }
    pub(crate) fn defined(&self) -> bool {
        self.st_shndx != SHN_UNDEF
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Rela {
    pub r_offset: u64,
    pub r_info: u64,
    pub r_addend: i64,
}

impl Rela {
    pub(crate) fn kind(&self) -> u32 {
        self.r_info as u32
    }
    pub(crate) fn sym(&self) -> usize {
        (self.r_info >> 32) as usize
    }
}

#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

#[repr(C)]
struct Verdef {
    vd_version: u16,
    vd_flags: u16,
    vd_ndx: u16,
    vd_cnt: u16,
    vd_hash: u32,
    vd_aux: u32,
    vd_next: u32,
}

#[repr(C)]
struct Verdaux {
    vda_name: u32,
    vda_next: u32,
}

#[repr(C)]
struct Verneed {
    vn_version: u16,
    vn_cnt: u16,
    vn_file: u32,
    vn_aux: u32,
    vn_next: u32,
}

#[repr(C)]
struct Vernaux {
    vna_hash: u32,
    vna_flags: u16,
    vna_other: u16,
    vna_name: u32,
    vna_next: u32,
}

/// A symbol version a reference asks for.
#[derive(Clone, Copy)]
pub(crate) struct Version<'a> {
    pub name: &'a [u8],
    pub hidden: bool,
}

/// A loaded object's dynamic information. Addresses are absolute (in the
/// loaded original); `base` is its load bias.
pub(crate) struct Dynamic {
    pub base: usize,
    pub phdrs: &'static [Phdr],
    symtab: usize,
    strtab: usize,
    gnu_hash: usize,
    hash: usize,
    versym: usize,
    verdef: usize,
    verneed: usize,
    pub rela: &'static [Rela],
    pub jmprel: &'static [Rela],
    pub relr: &'static [u64],
    pub init: usize,
    pub init_array: usize,
    pub init_array_len: usize,
    pub textrel: bool,
}

/// Reads `T` values at an absolute address.
///
/// # Safety
/// `addr..addr + n * size_of::<T>()` is mapped, readable and holds `T`s.
unsafe fn slice_at<T>(addr: usize, n: usize) -> &'static [T] {
    if n == 0 || addr == 0 {
        return &[];
    }
    // SAFETY: per the contract.
    unsafe { core::slice::from_raw_parts(addr as *const T, n) }
}

impl Dynamic {
    /// Reads the dynamic section of the object loaded at `base` with
    /// program headers `phdrs`. None if it has none (a static program).
    ///
    /// # Safety
    /// `phdrs` are a loaded object's program headers and `base` its load
    /// bias, as `dl_iterate_phdr` reports them.
    pub(crate) unsafe fn read(base: usize, phdrs: &'static [Phdr]) -> Option<Dynamic> {
        let dynamic = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC)?;
        let mut d = Dynamic {
            base,
            phdrs,
            symtab: 0,
            strtab: 0,
            gnu_hash: 0,
            hash: 0,
            versym: 0,
            verdef: 0,
            verneed: 0,
            rela: &[],
            jmprel: &[],
            relr: &[],
            init: 0,
            init_array: 0,
            init_array_len: 0,
            textrel: false,
        };
        let (mut rela, mut relasz, mut jmprel, mut pltrelsz, mut relr, mut relrsz) =
            (0, 0, 0, 0, 0, 0);
        let mut p = base + dynamic.p_vaddr as usize;
        loop {
            // SAFETY: the dynamic section is mapped and ends with DT_NULL.
            let e = unsafe { &*(p as *const Dyn) };
            p += core::mem::size_of::<Dyn>();
            let v = e.val as usize;
            // glibc's loader relocates the address-valued entries in place
            // (they read as absolute addresses); musl's does not. An entry
            // below the bias is still relative.
            let abs = |v: usize| if v < base { base + v } else { v };
            match e.tag {
                DT_NULL => break,
                DT_SYMTAB => d.symtab = abs(v),
                DT_STRTAB => d.strtab = abs(v),
                DT_GNU_HASH => d.gnu_hash = abs(v),
                DT_HASH => d.hash = abs(v),
                DT_VERSYM => d.versym = abs(v),
                DT_VERDEF => d.verdef = abs(v),
                DT_VERNEED => d.verneed = abs(v),
                DT_RELA => rela = abs(v),
                DT_RELASZ => relasz = v,
                DT_JMPREL => jmprel = abs(v),
                DT_PLTRELSZ => pltrelsz = v,
                DT_RELR => relr = abs(v),
                DT_RELRSZ => relrsz = v,
                DT_INIT => d.init = base + v,
                DT_INIT_ARRAY => d.init_array = base + v,
                DT_INIT_ARRAYSZ => d.init_array_len = v / 8,
                DT_TEXTREL => d.textrel = true,
                DT_FLAGS => d.textrel |= e.val & DF_TEXTREL != 0,
                _ => {}
            }
        }
        // SAFETY: the tables the dynamic section names are mapped.
        unsafe {
            d.rela = slice_at(rela, relasz / core::mem::size_of::<Rela>());
            d.jmprel = slice_at(jmprel, pltrelsz / core::mem::size_of::<Rela>());
            d.relr = slice_at(relr, relrsz / 8);
        }
        Some(d)
    }

    pub(crate) fn sym(&self, i: usize) -> &'static Sym {
        // SAFETY: `i` comes from this object's relocations or hash chains,
        // which index its symbol table.
        unsafe { &*((self.symtab + i * core::mem::size_of::<Sym>()) as *const Sym) }
    }

    pub(crate) fn str_at(&self, off: u32) -> &'static [u8] {
        // SAFETY: string-table offsets from this object's own records.
        unsafe { CStr::from_ptr((self.strtab + off as usize) as *const libc::c_char).to_bytes() }
    }

    pub(crate) fn sym_name(&self, i: usize) -> &'static [u8] {
        self.str_at(self.sym(i).st_name)
    }

    fn versym(&self, i: usize) -> Option<u16> {
        if self.versym == 0 {
            return None;
        }
        // SAFETY: the version table has one entry per symbol.
        Some(unsafe { *((self.versym + 2 * i) as *const u16) })
    }

    /// The version that relocation symbol `i` of this object asks for.
    pub(crate) fn wanted_version(&self, i: usize) -> Option<Version<'static>> {
        let v = self.versym(i)?;
        let ndx = v & 0x7fff;
        if ndx < 2 {
            return None;
        }
        let hidden = v & 0x8000 != 0;
        if self.sym(i).defined() {
            return self.verdef_name(ndx).map(|name| Version { name, hidden });
        }
        let mut p = self.verneed;
        while p != 0 {
            // SAFETY: verneed records chained by vn_next, as the linker wrote them.
            let vn = unsafe { &*(p as *const Verneed) };
            let mut a = p + vn.vn_aux as usize;
            for _ in 0..vn.vn_cnt {
                // SAFETY: as above.
                let aux = unsafe { &*(a as *const Vernaux) };
                if aux.vna_other == ndx {
                    return Some(Version {
                        name: self.str_at(aux.vna_name),
                        hidden,
                    });
                }
                a += aux.vna_next as usize;
            }
            if vn.vn_next == 0 {
                break;
            }
            p += vn.vn_next as usize;
        }
        None
    }

    fn verdef_name(&self, ndx: u16) -> Option<&'static [u8]> {
        let mut p = self.verdef;
        while p != 0 {
            // SAFETY: verdef records chained by vd_next.
            let vd = unsafe { &*(p as *const Verdef) };
            if vd.vd_ndx & 0x7fff == ndx {
                // SAFETY: its first aux record names it.
                let aux = unsafe { &*((p + vd.vd_aux as usize) as *const Verdaux) };
                return Some(self.str_at(aux.vda_name));
            }
            if vd.vd_next == 0 {
                break;
            }
            p += vd.vd_next as usize;
        }
        None
    }

    /// Does definition `i` of this object satisfy a reference asking for
    /// `want`? (The rules of glibc's `check_match`.)
    fn version_ok(&self, i: usize, want: Option<Version<'_>>) -> bool {
        let Some(v) = self.versym(i) else {
            return true;
        };
        let ndx = v & 0x7fff;
        let hidden = v & 0x8000 != 0;
        match want {
            None => !hidden,
            Some(w) => {
                if ndx < 2 {
                    return !hidden && !w.hidden;
                }
                self.verdef_name(ndx) == Some(w.name)
            }
        }
    }

    /// The number of symbols (from DT_HASH, or the GNU hash chains).
    pub(crate) fn nsyms(&self) -> usize {
        if self.hash != 0 {
            // SAFETY: DT_HASH starts with nbucket, nchain.
            return unsafe { *((self.hash + 4) as *const u32) } as usize;
        }
        if self.gnu_hash == 0 {
            return 0;
        }
        // SAFETY: the GNU hash table's layout (see `lookup`).
        unsafe {
            let h = self.gnu_hash;
            let nbuckets = *(h as *const u32) as usize;
            let symoffset = *((h + 4) as *const u32) as usize;
            let bloom_size = *((h + 8) as *const u32) as usize;
            let buckets = (h + 16 + 8 * bloom_size) as *const u32;
            let chains = buckets.add(nbuckets);
            let mut last = 0usize;
            for b in 0..nbuckets {
                last = last.max(*buckets.add(b) as usize);
            }
            if last < symoffset {
                return symoffset;
            }
            while *chains.add(last - symoffset) & 1 == 0 {
                last += 1;
            }
            last + 1
        }
    }

    /// Finds a global definition of `name` (with the version `want`, if
    /// any). Returns its index.
    pub(crate) fn lookup(&self, name: &[u8], want: Option<Version<'_>>) -> Option<usize> {
        let ok = |i: usize| {
            let s = self.sym(i);
            s.defined()
                && s.bind() != STB_LOCAL
                && (s.st_value != 0 || s.kind() == STT_TLS)
                && self.sym_name(i) == name
                && self.version_ok(i, want)
        };
        if self.gnu_hash != 0 {
            let hash = gnu_hash(name);
            // SAFETY: the GNU hash table: nbuckets, symoffset, bloom_size,
            // bloom_shift, bloom words (64-bit), buckets, chains.
            unsafe {
                let h = self.gnu_hash;
                let nbuckets = *(h as *const u32);
                let symoffset = *((h + 4) as *const u32) as usize;
                let bloom_size = *((h + 8) as *const u32);
                let bloom_shift = *((h + 12) as *const u32);
                let bloom = (h + 16) as *const u64;
                let word = *bloom.add(((hash / 64) % bloom_size) as usize);
                let mask = (1u64 << (hash % 64)) | (1u64 << ((hash >> bloom_shift) % 64));
                if word & mask != mask {
                    return None;
                }
                let buckets = bloom.add(bloom_size as usize) as *const u32;
                let chains = buckets.add(nbuckets as usize);
                let mut i = *buckets.add((hash % nbuckets) as usize) as usize;
                if i < symoffset {
                    return None;
                }
                loop {
                    let ch = *chains.add(i - symoffset);
                    if (ch | 1) == (hash | 1) && ok(i) {
                        return Some(i);
                    }
                    if ch & 1 != 0 {
                        return None;
                    }
                    i += 1;
                }
            }
        }
        (1..self.nsyms()).find(|&i| ok(i))
    }
}

fn gnu_hash(name: &[u8]) -> u32 {
    name.iter()
        .fold(5381u32, |h, &c| h.wrapping_mul(33).wrapping_add(c as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gnu_hash_matches_the_abi() {
        // Values from the GNU hash specification's examples.
        assert_eq!(gnu_hash(b""), 0x0000_1505);
        assert_eq!(gnu_hash(b"printf"), 0x156b_2bb8);
        assert_eq!(gnu_hash(b"exit"), 0x7c96_7e3f);
        assert_eq!(gnu_hash(b"syscall"), 0xbac2_12a0);
    }
}
