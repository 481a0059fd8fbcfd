# leuktrack - GNU Make build.
#   make            build ./leuktrack (CUDA objects when nvcc is found; CUDA=0 forces CPU-only)
#   make check      build and run all tests (installs missing dependencies first)
#   make demo       generate the synthetic sample, track it, print accuracy
#   make bench      benchmark tables (docs/PERFORMANCE.md)
#   make portable   self-contained binary linked against a static minimal FFmpeg
#   make install prefix=/usr/local DESTDIR=   (bindir, mandir; also the batch and Slurm scripts)
#   make uninstall
#   make SANITIZE=1 check   ASan + UBSan build
SHELL := /bin/bash
# GNU installation directories (PREFIX is accepted as the old name of prefix)
PREFIX ?= /usr/local
prefix ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir ?= $(exec_prefix)/bin
datarootdir ?= $(prefix)/share
mandir ?= $(datarootdir)/man
VERSION := 0.1.0
BUILD ?= build

CC ?= gcc
PKG_CONFIG ?= pkg-config
PKGS := libavformat libavcodec libswscale libavutil libpng cairo fontconfig
PORTABLE ?= 0
# niftilib's headers include each other as "znzlib.h": its folder on the path
NIFTI_CFLAGS ?= -I/usr/include/nifti
ifeq ($(PORTABLE),1)
  FFMPEG_STATIC ?= $(abspath ../shared/tools/ffmpeg-static)
  PKG_STATIC := PKG_CONFIG_PATH=$(FFMPEG_STATIC)/lib/pkgconfig $(PKG_CONFIG) --static
  DEP_CFLAGS := $(shell $(PKG_STATIC) --cflags libavformat libavcodec libswscale libavutil 2>/dev/null) $(shell $(PKG_CONFIG) --cflags libpng 2>/dev/null)
  DEP_LIBS := $(shell $(PKG_STATIC) --libs libavformat libavcodec libswscale libavutil 2>/dev/null) $(shell $(PKG_CONFIG) --libs libpng 2>/dev/null) -lz
  # niftilib static too (the GPU machine has no libnifti2): the .a files of libnifti2-dev
  NIFTI_A := $(shell $(CC) -print-file-name=libniftiio.a) $(shell $(CC) -print-file-name=libznz.a)
  DEP_LIBS := $(NIFTI_A) $(DEP_LIBS)
  # libtiff (CTC label masks) static when its .a and those of every library
  # `pkg-config --static --libs libtiff-4` names exist; else the portable
  # binary has no TIFF output (--format ctc -o DIR/ stops with an error).
  TIFF_STATIC_LIBS := $(shell $(PKG_CONFIG) --static --libs-only-l libtiff-4 2>/dev/null)
  TIFF_STATIC_A := $(foreach l,$(patsubst -l%,%,$(filter-out -lm -lpthread -lc -ldl,$(TIFF_STATIC_LIBS))),$(shell f=$$($(CC) -print-file-name=lib$(l).a); [ -f "$$f" ] && echo "$$f" || echo MISSING))
  ifneq ($(TIFF_STATIC_LIBS),)
    ifeq ($(filter MISSING,$(TIFF_STATIC_A)),)
      DEP_CFLAGS += $(shell $(PKG_CONFIG) --cflags libtiff-4) -DLT_HAVE_TIFF
      # libLerc (a libtiff codec) is C++: its runtime, which CUDA builds link anyway
      DEP_LIBS := $(TIFF_STATIC_A) $(DEP_LIBS) $(if $(filter %libLerc.a,$(TIFF_STATIC_A)),-lstdc++)
    endif
  endif
  # No Cairo here: Debian ships libcairo.a, but a static Cairo drags in static
  # fontconfig/freetype/pixman/X11 and would read the GPU machine's font setup,
  # which is not known to exist; the portable binary draws its plots with the
  # built-in bitmap font instead (PNG + SVG, no PDF; `leuktrack --version`).
  BUILD := build-portable
else
  DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
  DEP_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
  # niftilib (Debian libnifti2-dev) ships no .pc file: NIfTI I/O of the 3D flow mode
  DEP_LIBS += -lniftiio -lznz -lz
  # libtiff (Debian libtiff-dev): the CTC label masks of --format ctc -o DIR/
  DEP_CFLAGS += $(shell $(PKG_CONFIG) --cflags libtiff-4 2>/dev/null) -DLT_HAVE_TIFF
  DEP_LIBS += $(shell $(PKG_CONFIG) --libs libtiff-4 2>/dev/null || echo -ltiff)
  # Cairo (Debian libcairo2-dev, in PKGS): the figures (PNG, PDF with real fonts);
  # fontconfig (its dependency) directly: plot.c releases its caches at exit
  DEP_CFLAGS += -DLT_HAVE_CAIRO
endif

DEP_CFLAGS += $(NIFTI_CFLAGS)

WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
# x86-64-v2 (SSE4.2) baseline; hot loops carry an AVX2 clone chosen at run time
CFLAGS ?= -O3 -g $(if $(filter x86_64,$(shell uname -m)),-march=x86-64-v2,)
CFLAGS += -std=c11 -D_GNU_SOURCE -fopenmp $(WARN) -Isrc -Isrc/io -Isrc/leukocyte $(DEP_CFLAGS) -DLT_VERSION=\"$(VERSION)\"
LDLIBS += $(DEP_LIBS) -fopenmp -lpthread -lm

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
  CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDLIBS += -fsanitize=address,undefined
  BUILD := build-san
endif

# CUDA: on when nvcc is found, unless CUDA=0.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(CUDA),0)
  NVCC :=
endif
ifeq ($(SANITIZE),1)
  NVCC :=
endif
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=compute_90
ifneq ($(NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  CFLAGS += -DLT_HAVE_CUDA
  NVCCFLAGS ?= -O3 -std=c++17 $(CUDA_ARCH) -Isrc -Isrc/io -Isrc/leukocyte -Icuda -Xcompiler -fPIC,-Wall,-fopenmp -lineinfo
  CU_SRCS := $(shell find cuda -name '*.cu' 2>/dev/null | sort)
  LDLIBS += -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -ldl -lrt -lstdc++
  FOUND := CUDA ($(NVCC)) + OpenMP
else
  CU_SRCS :=
  FOUND := CPU only (no nvcc or CUDA=0) + OpenMP
  # objects compiled without LT_HAVE_CUDA live apart from the CUDA build's
  ifeq ($(BUILD),build)
    BUILD := build-cpu
  endif
endif

LIB_SRCS := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(CU_SRCS:%.cu=$(BUILD)/%.cu.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TOOL_SRCS := $(sort $(wildcard data/*.c))
TOOL_BINS := $(TOOL_SRCS:data/%.c=$(BUILD)/tools/%)
BIN := leuktrack$(if $(filter 1,$(PORTABLE)),-portable,)$(if $(filter 1,$(SANITIZE)),-san,)

.PHONY: all check demo bench accuracy install uninstall clean deps portable fuzz tools found
all: found $(BIN) tools

found:
	@echo "leuktrack build: $(FOUND); FFmpeg/libpng via pkg-config$(if $(filter 1,$(PORTABLE)), (static FFmpeg from $(FFMPEG_STATIC)),)"
	@test -f $(patsubst -I%,%,$(firstword $(NIFTI_CFLAGS)))/nifti1_io.h || \
	  { echo "leuktrack build: niftilib development files missing (Debian libnifti2-dev); run scripts/install-deps.sh (or make check / make demo)" >&2; exit 1; }
	@$(PKG_CONFIG) --exists libpng $(if $(filter 1,$(PORTABLE)),,$(PKGS)) 2>/dev/null || \
	  { echo "leuktrack build: FFmpeg, libpng or Cairo development files missing; run scripts/install-deps.sh (or make check / make demo)" >&2; exit 1; }

$(BUILD)/%.o: %.c $(wildcard src/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(wildcard src/*.h src/*/*.h cuda/*.h cuda/*/*.h cuda/*/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/libleuktrack.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/src/main.o $(BUILD)/libleuktrack.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/test.h $(BUILD)/libleuktrack.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $< $(BUILD)/libleuktrack.a -o $@ $(LDLIBS)

$(BUILD)/tools/%: data/%.c $(BUILD)/libleuktrack.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libleuktrack.a -o $@ $(LDLIBS)

tools: $(TOOL_BINS)

deps:
	@bash scripts/install-deps.sh --if-missing

check: deps
	@$(MAKE) --no-print-directory all $(TEST_BINS)
	@BUILD=$(BUILD) LT_BIN=./$(BIN) bash tests/run.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bash scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bash scripts/bench.sh

accuracy: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bash scripts/accuracy.sh

portable:
	@test -f $(abspath ../shared/tools/ffmpeg-static)/lib/pkgconfig/libavformat.pc -o -n "$(FFMPEG_STATIC)" || \
	  { echo "make portable: no static FFmpeg in ../shared/tools/ffmpeg-static; build one with scripts/build-ffmpeg-static.sh --prefix DIR, then make portable FFMPEG_STATIC=DIR" >&2; exit 1; }
	@test -z "$(FFMPEG_STATIC)" -o -f "$(FFMPEG_STATIC)/lib/pkgconfig/libavformat.pc" || \
	  { echo "make portable: FFMPEG_STATIC=$(FFMPEG_STATIC) holds no lib/pkgconfig/libavformat.pc; build it with scripts/build-ffmpeg-static.sh" >&2; exit 1; }
	@$(MAKE) --no-print-directory PORTABLE=1 all

install: $(BIN) $(BUILD)/tools/lt_merge
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(mandir)/man1
	install -m 755 $(BIN) $(DESTDIR)$(bindir)/leuktrack
	install -m 755 scripts/leuktrack-batch $(DESTDIR)$(bindir)/leuktrack-batch
	install -m 755 scripts/leuktrack-slurm.sbatch $(DESTDIR)$(bindir)/leuktrack-slurm.sbatch
	install -m 755 scripts/leuktrack-merge.sbatch $(DESTDIR)$(bindir)/leuktrack-merge.sbatch
	install -m 755 $(BUILD)/tools/lt_merge $(DESTDIR)$(bindir)/leuktrack-merge
	install -m 644 man/leuktrack.1 $(DESTDIR)$(mandir)/man1/leuktrack.1

uninstall:
	rm -f $(DESTDIR)$(bindir)/leuktrack $(DESTDIR)$(bindir)/leuktrack-batch \
	  $(DESTDIR)$(bindir)/leuktrack-slurm.sbatch $(DESTDIR)$(bindir)/leuktrack-merge \
	  $(DESTDIR)$(bindir)/leuktrack-merge.sbatch $(DESTDIR)$(mandir)/man1/leuktrack.1

clean:
	rm -rf build build-cpu build-san build-portable build-fuzz leuktrack leuktrack-portable leuktrack-san

# Optional rule sets (fuzzing): mk/*.mk
-include $(wildcard mk/*.mk)

# The NVIDIA NPP peer of the tumour benchmark (scripts/bench_tumor.sh):
# `make npp-bench` in a CUDA build on a machine with NPP; static NPP when
# its archives are there. Not part of `all` (CPU-only builds unaffected).
NPP_DIR ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NPP_LIBS = $(if $(wildcard $(NPP_DIR)/lib64/libnppist_static.a),-lnppist_static -lnppc_static -lculibos,-lnppist -lnppc)
npp-bench: $(BUILD)/tools/lt_npp_bench
$(BUILD)/tools/lt_npp_bench: data/lt_npp_bench.cu
	@test -n "$(NVCC)" || { echo "npp-bench: needs nvcc and NPP" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $< -o $@ -L$(NPP_DIR)/lib64 $(NPP_LIBS)
.PHONY: npp-bench
