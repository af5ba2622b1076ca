/*
 * touch-after-fault: how much a user access costs right after the fault
 * that mapped its page (docs/benchmarks.md, "Modelled time", file-seq-64k).
 *
 *   cc -O2 -o /tmp/taf crates/cli/scripts/touch-after-fault.c
 *   /tmp/taf FILE MODE        (FILE: 256 MiB, warm in the page cache)
 *
 * Prints the thread CPU time of one pass over the 65536 pages of FILE,
 * mapped MAP_SHARED read-only, reading one byte per touched page:
 *   0   every page in order (each fault-around fault, then its window)
 *   1   every page in a random order (SplitMix64, seed 1)
 *   2   only the first page of each 16-page window (the faults alone)
 *   6   fault every window first (untimed), then time a pass over all pages
 *   10  fault window w, then touch the other pages of window w-1
 *   20+n  fault window w, then touch its next n pages (n = 0..15)
 *   50  only every STRIDE-th page (env STRIDE): one access per folio
 * SHIFT=k (env) maps the file k pages past a 2 MiB boundary, so that
 * large folios straddle PMDs and are mapped by the fault-around window.
 * Files of one folio size: write them with dd bs=<size> (ext4 makes
 * folios of the write size).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>
#define SZ (256UL<<20)
#define NP (SZ/4096)
static double cpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static uint64_t s=1; static uint64_t sm(void){uint64_t z=(s+=0x9e3779b97f4a7c15ULL);z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL;z=(z^(z>>27))*0x94d049bb133111ebULL;return z^(z>>31);}
int main(int argc,char**argv){
  int fd=open(argv[1],O_RDONLY); int mode=atoi(argv[2]);
  static uint32_t idx[NP]; for(uint32_t i=0;i<NP;i++) idx[i]=i;
  if(mode==1||mode==3){ for(uint32_t i=NP-1;i>0;i--){uint32_t j=sm()%(i+1);uint32_t t=idx[i];idx[i]=idx[j];idx[j]=t;} }
  volatile char *p;
  if(getenv("SHIFT")){ char *b=mmap(0,SZ+(4UL<<20),PROT_NONE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); b=(char*)(((unsigned long)b+(2UL<<20)-1)&~((2UL<<20)-1)); p=mmap(b+atoi(getenv("SHIFT"))*4096UL,SZ,PROT_READ,MAP_SHARED|MAP_FIXED,fd,0);} else p=mmap(0,SZ,PROT_READ,MAP_SHARED,fd,0);
  unsigned long sum=0; double t0=cpu();
  if(mode==0||mode==1) for(uint32_t i=0;i<NP;i++) sum+=p[(size_t)idx[i]*4096];
  else if(mode==2) for(uint32_t i=0;i<NP;i+=16) sum+=p[(size_t)i*4096];     /* first page of each window, in order */
  else if(mode==3) { for(uint32_t i=0;i<NP;i++) if(idx[i]%16==0) sum+=p[(size_t)idx[i]*4096]; } /* window heads in random order */
  else if(mode==4) for(uint32_t i=0;i<NP;i+=16) sum+=p[(size_t)(i+15)*4096]; /* last page of each window in order */
  else if(mode==5) for(uint32_t w=NP/16;w-->0;) sum+=p[(size_t)w*16*4096]; /* windows in descending order */
  else if(mode==6||mode==7){ for(uint32_t i=0;i<NP;i+=16) sum+=p[(size_t)i*4096]; if(mode==7) for(uint32_t i=NP-1;i>0;i--){uint32_t j=sm()%(i+1);uint32_t t=idx[i];idx[i]=idx[j];idx[j]=t;}
     t0=cpu(); for(uint32_t i=0;i<NP;i++) sum+=p[(size_t)idx[i]*4096]; }
  else if(mode==8) { for(uint32_t i=0;i<NP;i+=16){ sum+=p[(size_t)i*4096]; for(int k=1;k<16;k++) sum+=p[(size_t)(i+k)*4096+64*k]; } }
  else if(mode==10) { for(uint32_t i=0;i<NP;i+=16){ sum+=p[(size_t)i*4096]; if(i) for(int k=1;k<16;k++) sum+=p[(size_t)(i-16+k)*4096]; } for(int k=1;k<16;k++) sum+=p[(size_t)(NP-16+k)*4096]; }
  else if(mode==11) { for(uint32_t i=0;i<NP;i+=16){ sum+=p[(size_t)i*4096]; for(int k=1;k<16;k++) sum+=p[(size_t)(i+k)*4096+2048]; } }
  else if(mode==12) { for(uint32_t i=0;i<NP;i+=16){ sum+=p[(size_t)i*4096]; for(int k=1;k<16;k++) sum+=p[(size_t)(i+k)*4096]; for(int k=1;k<16;k++) sum+=p[(size_t)(i+k)*4096+64]; } }
  else if(mode>=20&&mode<=36) { int n=mode-20; for(uint32_t i=0;i<NP;i+=16){ sum+=p[(size_t)i*4096]; for(int k=1;k<=n;k++) sum+=p[(size_t)(i+k)*4096]; } }
  else if(mode>=100&&mode<=400) { int n=mode-100; for(uint32_t i=0;i<NP;i+=256){ sum+=p[(size_t)i*4096]; for(int k=1;k<=n;k++) sum+=p[(size_t)(i+k)*4096]; } }
  else if(mode==50) { int st=atoi(getenv("STRIDE")); for(uint32_t i=0;i<NP;i+=st) sum+=p[(size_t)i*4096]; }
  double t1=cpu(); printf("mode %d: %.2f ms\n",mode,t1-t0); return sum==42;
}
