//! Entry from the program and exit back to it.
