//! `#[syscall]`: a system call handler of the picos runtime with typed
//! arguments.
//!
//! The syscall table calls every handler as `fn(&mut Ctx<'_>) -> SysResult`.
//! A handler written as
//!
//! ```ignore
//! /// Implements getpgid(2).
//! #[syscall]
//! pub fn getpgid(c: &mut Ctx<'_>, pid: i32) -> SysResult { ... }
//! ```
//!
//! becomes that function, which converts the call's registers to the
//! declared types (`crate::sys::Arg`, as Linux reads them: an `int` is the
//! low 32 bits of its register) and calls the body with them. The raw
//! registers stay in the context (`c.args`, and `c.host()` passes the call
//! on unchanged).
//!
//! Why a procedural macro: the handlers keep the form of ordinary
//! functions, which rustfmt formats and readers and tools see as such; a
//! `macro_rules!` form would hide them in an unformatted macro body.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, FnArg, ItemFn, Pat};

#[proc_macro_attribute]
pub fn syscall(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[syscall] takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    let f = parse_macro_input!(item as ItemFn);
    let inputs: Vec<&FnArg> = f.sig.inputs.iter().collect();
    let Some((_ctx, args)) = inputs.split_first() else {
        return syn::Error::new_spanned(
            &f.sig,
            "a #[syscall] handler takes the context first: `c: &mut Ctx<'_>`",
        )
        .to_compile_error()
        .into();
    };
    if args.len() > 6 {
        return syn::Error::new_spanned(&f.sig.inputs, "a system call has at most 6 arguments")
            .to_compile_error()
            .into();
    }
    let mut names = Vec::new();
    let mut types = Vec::new();
    for a in args {
        let FnArg::Typed(pt) = a else {
            return syn::Error::new_spanned(a, "unexpected receiver")
                .to_compile_error()
                .into();
        };
        let Pat::Ident(id) = &*pt.pat else {
            return syn::Error::new_spanned(&pt.pat, "an argument must be a plain name")
                .to_compile_error()
                .into();
        };
        names.push(id.ident.clone());
        types.push((*pt.ty).clone());
    }
    let index = 0..names.len();
    let attrs = &f.attrs;
    let vis = &f.vis;
    let name = &f.sig.ident;
    let inner_inputs = &f.sig.inputs;
    let output = &f.sig.output;
    let body = &f.block;
    quote! {
        #(#attrs)*
        #vis fn #name(c: &mut crate::sys::Ctx<'_>) -> crate::sys::SysResult {
            #[inline(always)]
            fn typed(#inner_inputs) #output #body
            #(let #names = <#types as crate::sys::Arg>::from_reg(c.args[#index]);)*
            typed(c, #(#names),*)
        }
    }
    .into()
}
