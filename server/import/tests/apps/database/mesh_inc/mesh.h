#ifndef DATABASE_MESH_H
#define DATABASE_MESH_H
#define SPACING 0.5
#endif
