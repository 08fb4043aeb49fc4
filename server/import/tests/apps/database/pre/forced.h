#define OFFSET 0.25
