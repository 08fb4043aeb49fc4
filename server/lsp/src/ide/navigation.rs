//! Names: what is under the cursor, where it is defined and used.
