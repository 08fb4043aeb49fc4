//! What the code generator makes of the program, as editors show it.
