// op2 import's stand-in for OP2's profiling header: profiling does nothing
// while the set-up is captured.
#ifndef OP2_IMPORT_RECORDING_OP_PROFILE_H
#define OP2_IMPORT_RECORDING_OP_PROFILE_H
inline void op_profile_start(const char *) {}
inline void op_profile_enter(const char *) {}
inline void op_profile_exit() {}
inline void op_profile_end() {}
inline void op_profile_output() {}
#endif
