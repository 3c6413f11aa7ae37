#ifndef C_PROC_CHECK_H
#define C_PROC_CHECK_H

/* presence-gateway's check that /proc is mounted, made by a constructor before
   main (CProcCheck.c). This header declares nothing; it exists so the module can
   be imported. */

#endif
