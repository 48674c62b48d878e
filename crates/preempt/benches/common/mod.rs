#![allow(dead_code)]

pub mod stats;
