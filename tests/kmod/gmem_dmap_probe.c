// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_dmap_probe: test-only module, loaded in the shim guest by
 * gmem_ndm_test, never on a host. For a guest_memfd page (fd and offset of
 * the caller) or any pfn, it reports whether the page is in the kernel's
 * direct map: its page-table entry there (lookup_address()), and a read
 * through it with copy_from_kernel_nofault() on every CPU, which also shows a
 * TLB flush that did not reach a CPU, the size of that entry (a 2 MiB
 * folio must leave the direct map without splitting its 2 MiB entry), and
 * how many words of the page hold a value the caller names (a freed page
 * must have been cleared). It never dereferences the address itself: the
 * shim kernel panics on an oops.
 */
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <asm/pgtable.h>

#include "gmem_dmap_probe.h"

static struct dentry *probe_file;

struct probe_read {
	void *addr;
	atomic_t ok;
};

static void probe_read_on_cpu(void *info)
{
	struct probe_read *r = info;
	u8 byte;

	if (!copy_from_kernel_nofault(&byte, r->addr, 1))
		atomic_inc(&r->ok);
}

/* The pfn of the page at p->offset of the caller's file p->fd. */
static int probe_file_page(struct gmem_dmap_probe *p)
{
	pgoff_t index = p->offset >> PAGE_SHIFT;
	struct folio *folio;
	struct file *file;

	file = fget(p->fd);
	if (!file)
		return -EBADF;
	folio = filemap_get_folio(file->f_mapping, index);
	fput(file);
	if (IS_ERR(folio))
		return PTR_ERR(folio);

	p->pfn = folio_pfn(folio) + index - folio->index;
	folio_put(folio);
	return 0;
}

static long probe_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct probe_read r = { };
	struct gmem_dmap_probe p;
	unsigned int level;
	pte_t *pte;
	int ret;

	if (cmd != GMEM_DMAP_PROBE)
		return -ENOTTY;
	if (copy_from_user(&p, (void __user *)arg, sizeof(p)))
		return -EFAULT;
	if (p.fd >= 0) {
		ret = probe_file_page(&p);
		if (ret)
			return ret;
	}
	if (!pfn_valid(p.pfn))
		return -EINVAL;

	r.addr = page_address(pfn_to_page(p.pfn));
	pte = lookup_address((unsigned long)r.addr, &level);
	p.present = pte && (pte_val(*pte) & _PAGE_PRESENT);
	p.level = pte ? level : 0;
	cpus_read_lock();
	on_each_cpu(probe_read_on_cpu, &r, 1);
	p.nr_cpus = num_online_cpus();
	cpus_read_unlock();
	p.readable_cpus = atomic_read(&r.ok);
	p.cookie_words = 0;
	if (p.present) {
		u64 *words = kmalloc(PAGE_SIZE, GFP_KERNEL);
		int i;

		if (!words)
			return -ENOMEM;
		if (!copy_from_kernel_nofault(words, r.addr, PAGE_SIZE))
			for (i = 0; i < PAGE_SIZE / sizeof(u64); i++)
				p.cookie_words += words[i] == p.cookie;
		kfree(words);
	}

	return copy_to_user((void __user *)arg, &p, sizeof(p)) ? -EFAULT : 0;
}

static const struct file_operations probe_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = probe_ioctl,
};

static int __init probe_init(void)
{
	probe_file = debugfs_create_file("gmem_dmap_probe", 0600, NULL, NULL, &probe_fops);
	return IS_ERR(probe_file) ? PTR_ERR(probe_file) : 0;
}

static void __exit probe_exit(void)
{
	debugfs_remove(probe_file);
}

module_init(probe_init);
module_exit(probe_exit);
MODULE_DESCRIPTION("kvm-gmem test: is a page in the kernel's direct map?");
MODULE_LICENSE("GPL");
